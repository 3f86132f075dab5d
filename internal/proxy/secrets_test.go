package proxy_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestNoSecretsOrAddressesInReplies: the upstream URL carries userinfo and
// a token in its query; whatever goes wrong, neither reaches the client or
// the log, and the reply names what happened without socket addresses,
// while the log line keeps the detail.
func TestNoSecretsOrAddressesInReplies(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()
	hang := faultserver.Start(t, faultserver.Options{Mode: faultserver.Normal,
		Reply: func(r *http.Request, b []byte) faultserver.Reply {
			time.Sleep(time.Second)
			return faultserver.EchoReply(r, b)
		}})
	tests := []struct {
		name, addr, message, detail string
		timeout                     time.Duration
		status                      int
	}{
		{"refused", deadAddr, "upstream refused the connection", "connection refused", 5 * time.Second, http.StatusBadGateway},
		{"timeout", strings.TrimPrefix(hang.URL, "http://"), "upstream timed out", "timeout", 300 * time.Millisecond, http.StatusGatewayTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := "http://operator:hunter2@" + tt.addr + "/mcp?token=s3cret-token"
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zapcore.DebugLevel)
			p, err := proxy.New(proxy.Options{Upstream: u, Logger: zap.New(core), UpstreamTimeout: tt.timeout})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			resp, b := sidecartest.Post(t, srv.URL, `{"jsonrpc":"2.0","id":"q","method":"tools/list"}`, nil)
			e := decodeErr(t, b)
			if resp.StatusCode != tt.status || e.Error.Message != tt.message {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, e.Error.Message, tt.status, tt.message)
			}
			host, _, _ := net.SplitHostPort(tt.addr)
			for _, secret := range []string{"hunter2", "s3cret", "operator", host, tt.addr} {
				if bytes.Contains(b, []byte(secret)) {
					t.Errorf("reply %q carries %q", b, secret)
				}
			}
			var logged strings.Builder
			for _, l := range requestLine(t, logs) {
				fmt.Fprintf(&logged, "%s %v\n", l.Message, l.ContextMap())
			}
			for _, secret := range []string{"hunter2", "s3cret"} {
				if strings.Contains(logged.String(), secret) {
					t.Errorf("log carries %q:\n%s", secret, logged.String())
				}
			}
			if !strings.Contains(logged.String(), tt.detail) {
				t.Errorf("log lost the detail %q:\n%s", tt.detail, logged.String())
			}
		})
	}
}
