package sidecar_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestSubscriptionSharesThroughTheSidecar: the legacy subscriptions to the
// sidecar's own skill URIs are a table callers share. Through the one
// assembly, with the gate off, a client that holds its share of them
// (40 of 4096 at 1%) over a session that streams nothing is refused 429
// caller_share_exhausted of notify_subscriptions, and another address
// still subscribes (found in review: one client could hold all 4096).
func TestSubscriptionSharesThroughTheSidecar(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(demo.Handler(nil))
	t.Cleanup(up.Close)
	sc := sidecartest.Start(t, up.URL, sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate = "none"
		c.CallerSharePercent = 1
	}})
	sc.WaitEras(t)
	subscribe := func(c *http.Client, sid string, i int) (int, string, string) {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"skill://later-%d/SKILL.md"}}`, i, i)
		req, _ := http.NewRequest(http.MethodPost, sc.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	attacker, other := from("127.0.0.2"), from("127.0.0.3")
	const share = 40 // 1% of 4096
	for i := range share {
		if code, _, body := subscribe(attacker, "attacker-session", i); code != http.StatusOK || !strings.Contains(body, `"result":{}`) {
			t.Fatalf("the attacker's subscription %d within its share: %d %.200s", i, code, body)
		}
	}
	code, retry, body := subscribe(attacker, "attacker-session", share)
	if code != http.StatusTooManyRequests || retry == "" || !strings.Contains(body, `"caller_share_exhausted"`) || !strings.Contains(body, `"notify_subscriptions"`) {
		t.Errorf("the attacker past its share: %d Retry-After %q %.300s, want 429 caller_share_exhausted of notify_subscriptions", code, retry, body)
	}
	if code, _, body := subscribe(other, "other-session", 0); code != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		t.Errorf("another address: %d %.200s, want the empty result", code, body)
	}
}
