package sidecar_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// from is an HTTP client whose connections come from the loopback address
// ip (127.0.0.0/8 is all loopback on Linux), so that the sidecar sees one
// client per address.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// listen opens a 2026-07-28 subscriptions/listen through the sidecar at u
// from client c, with X-Forwarded-For xff when set, and returns its
// status, Retry-After and the start of its body; the stream is closed when
// the test ends.
func listen(t *testing.T, c *http.Client, u, xff string, i int) (int, string, string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"l%d","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"x%d":{}}}}}`, i, i)
	return postListen(t, c, u, xff, body)
}

// postListen posts the subscriptions/listen body to the sidecar at u from
// client c, with X-Forwarded-For xff when set, and returns the reply's
// status, Retry-After and the start of its body; the stream is closed
// when the test ends.
func postListen(t *testing.T, c *http.Client, u, xff, body string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	buf := make([]byte, 400)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(buf[:n])
}

// TestSharesThroughTheSidecar: through the one assembly (proxy, caller
// binding, bridge), in front of a legacy-only upstream with the gate off:
// an anonymous client holding its share of listen streams is refused 429
// however it forges X-Forwarded-For, another address is served, and a
// trusted proxy's X-Forwarded-For names clients of their own.
func TestSharesThroughTheSidecar(t *testing.T) {
	up := httptest.NewServer(demo.Handler(nil))
	t.Cleanup(up.Close)
	sc := sidecartest.Start(t, up.URL, sidecartest.Options{Config: func(c *config.Config) {
		c.AuthGate = "none"
		c.CallerSharePercent = 1 // one listen each (of 128)
		c.TrustedProxies = "127.0.0.4"
	}})
	sc.WaitEras(t)
	attacker, other, proxy := from("127.0.0.2"), from("127.0.0.3"), from("127.0.0.4")
	if code, _, body := listen(t, attacker, sc.URL, "", 0); code != 200 {
		t.Fatalf("the attacker's first listen: %d %s", code, body)
	}
	for i, xff := range []string{"", "198.51.100.1", "198.51.100.2, 127.0.0.4"} {
		code, retry, body := listen(t, attacker, sc.URL, xff, i+1)
		if code != http.StatusTooManyRequests || retry == "" || !strings.Contains(body, "caller_share_exhausted") {
			t.Errorf("the attacker's listen with X-Forwarded-For %q: %d Retry-After %q %.200s, want 429 caller_share_exhausted", xff, code, retry, body)
		}
	}
	if code, _, body := listen(t, other, sc.URL, "", 0); code != 200 {
		t.Errorf("another address's listen: %d %.200s, want 200", code, body)
	}
	for i, xff := range []string{"198.51.100.7", "198.51.100.8"} {
		if code, _, body := listen(t, proxy, sc.URL, xff, i); code != 200 {
			t.Errorf("client %s behind the trusted proxy: %d %.200s, want 200", xff, code, body)
		}
	}
	if code, _, _ := listen(t, proxy, sc.URL, "198.51.100.7", 9); code != http.StatusTooManyRequests {
		t.Errorf("client 198.51.100.7 behind the trusted proxy, again: %d, want 429", code)
	}
}
