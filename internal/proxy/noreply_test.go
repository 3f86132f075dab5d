package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

func TestNoReplyError(t *testing.T) {
	t.Parallel()
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
