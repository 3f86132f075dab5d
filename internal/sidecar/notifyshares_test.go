package sidecar_test

import (
	"context"
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

// TestStreamSharesThroughTheSidecar: the streams that carry the sidecar's
// own notifications are a table callers share. In front of an upstream
// that answers a standalone GET with 405, the sidecar serves a session its
// own stream; a client holding its share of streams (40 of 4096 at 1%)
// gets the upstream's 405 instead, and another address still gets one.
func TestStreamSharesThroughTheSidecar(t *testing.T) {
	t.Parallel()
	inner := demo.Handler(nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no GET stream here", http.StatusMethodNotAllowed)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	sc := sidecartest.Start(t, up.URL, sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate = "none"
		c.CallerSharePercent = 1
	}})
	sc.WaitEras(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	get := func(c *http.Client, sid string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sc.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode
	}
	attacker, other := from("127.0.0.2"), from("127.0.0.3")
	const share = 40 // 1% of 4096
	for i := range share {
		if code := get(attacker, fmt.Sprintf("a%d", i)); code != http.StatusOK {
			t.Fatalf("the attacker's stream %d within its share: HTTP %d, want the sidecar's own stream", i, code)
		}
	}
	if code := get(attacker, "a-past"); code != http.StatusMethodNotAllowed {
		t.Errorf("the attacker's stream past its share: HTTP %d, want the upstream's 405", code)
	}
	if code := get(other, "b0"); code != http.StatusOK {
		t.Errorf("another address's stream: HTTP %d, want the sidecar's own stream", code)
	}
}
