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

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/deadaddr"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestNoSecretsOrAddressesInReplies: the upstream URL carries userinfo and
// a token in its query; whatever goes wrong, neither reaches the client or
// the log, and the reply names what happened without socket addresses,
// while the log line keeps the detail.
func TestNoSecretsOrAddressesInReplies(t *testing.T) {
	t.Parallel()
	deadAddr := deadaddr.Hold(t)
	// The upstream answers only once the test is over (or after a hang
	// guard): a reply that came a fixed second later could beat a 300 ms
	// timeout on a machine that stalled the sidecar longer than the
	// difference (it did once, under the unit stage's load).
	over := make(chan struct{})
	hang := faultserver.Start(t, faultserver.Options{Mode: faultserver.Normal,
		Reply: func(r *http.Request, b []byte) faultserver.Reply {
			select {
			case <-over:
			case <-time.After(30 * time.Second):
			}
			return faultserver.EchoReply(r, b)
		}})
	t.Cleanup(func() { close(over) }) // before the server's own clean-up, which waits for its handlers
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

// TestNoSecretsOrAddressesInBridgedReplies: the same rule through the era
// bridge. The upstream (its URL with userinfo and a token) is learned as
// legacy-only, or modern-only, and then dies: a 2026-07-28 call that needs
// a new held session, and a legacy initialize the legacy front answers
// from server/discover, each get a fixed message naming what failed, with
// neither the upstream's address nor its secrets, and no session id.
func TestNoSecretsOrAddressesInBridgedReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, eras string
		handler    http.Handler
		body       string
		h          http.Header
		reason     string
	}{
		{"legacy-only upstream, modern call", "legacy", demo.Handler(nil),
			`{"jsonrpc":"2.0","id":"q","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			sidecartest.Header("Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"), "bridge_session_failed"},
		{"modern-only upstream, legacy initialize", "modern", modernonly.Handler(modernonly.NewServer()),
			`{"jsonrpc":"2.0","id":"q","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			nil, "bridge_discover_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := httptest.NewServer(tt.handler)
			addr := strings.TrimPrefix(up.URL, "http://")
			sc := sidecartest.Start(t, "http://operator:hunter2@"+addr+"/mcp?token=s3cret-token", sidecartest.Options{
				Config: func(c *config.Config) { c.AuthGate = "none" }})
			sc.WaitEras(t)
			if got := sc.Eras.Current(); got.Label() != tt.eras {
				t.Fatalf("eras %q, want %q", got.Label(), tt.eras)
			}
			up.Close() // the upstream dies after the bridge learned it
			resp, b := sidecartest.Post(t, sc.URL, tt.body, tt.h)
			e := decodeErr(t, b)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), tt.reason) || resp.Header.Get("Mcp-Session-Id") != "" {
				t.Errorf("got %d %s (Mcp-Session-Id %q), want 502 %s and no session", resp.StatusCode, b, resp.Header.Get("Mcp-Session-Id"), tt.reason)
			}
			host, _, _ := net.SplitHostPort(addr)
			for _, secret := range []string{"hunter2", "s3cret", "operator", host, addr, "dial", "refused"} {
				if strings.Contains(e.Error.Message, secret) || bytes.Contains(b, []byte(secret)) {
					t.Errorf("reply %q carries %q", b, secret)
				}
			}
		})
	}
}
