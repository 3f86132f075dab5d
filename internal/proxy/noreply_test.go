package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

func TestNoReplyError(t *testing.T) {
	t.Parallel()
	// A dial that runs out of --dial-timeout fails as net.Dialer fails it
	// (a context past its deadline: no packet is sent). It is a timeout,
	// answered 504 as a late reply is; docs/configuration.md says so.
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	var d net.Dialer
	_, dialTimeout := d.DialContext(expired, "tcp", "127.0.0.1:1")
	if dialTimeout == nil {
		t.Fatal("a dial past its deadline succeeded")
	}
	tests := []struct {
		name   string
		err    error
		status int
		reason string
	}{
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), http.StatusBadGateway, "upstream_unreachable"},
		{"dead pooled connection", fmt.Errorf("read: %w", io.EOF), http.StatusBadGateway, "upstream_unreachable"},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), http.StatusBadGateway, "upstream_unreachable"},
		{"timeout", fmt.Errorf("headers: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, "upstream_timeout"},
		{"dial timeout", fmt.Errorf("hop: %w", dialTimeout), http.StatusGatewayTimeout, "upstream_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := proxy.NoReplyError(tt.err)
			reason := e.Data.(map[string]string)["reason"]
			if e.Status != tt.status || reason != tt.reason || e.Code != reply.CodeInternalError {
				t.Errorf("NoReplyError(%v) = %d %d %q, want %d %d %q", tt.err, e.Status, e.Code, reason, tt.status, reply.CodeInternalError, tt.reason)
			}
		})
	}
}
