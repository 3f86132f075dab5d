package bridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
)

// sessionBoundRefusal is what a bound of one session's own answers, as the
// stdio session's calls bound does (docs/security.md): HTTP 503 without
// Retry-After (waiting frees nothing: the session holds its places until
// it gives them back), -32603, data.reason "<table>_exhausted" and
// data.table naming the bound.
type sessionBoundRefusal struct {
	Status     int
	RetryAfter string
	Code       int
	Data       map[string]string
}

func readSessionBoundRefusal(t *testing.T, resp *http.Response, body []byte) sessionBoundRefusal {
	t.Helper()
	var m struct {
		Error struct {
			Code int               `json:"code"`
			Data map[string]string `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("the refusal is not one JSON-RPC error: HTTP %d %q", resp.StatusCode, body)
	}
	return sessionBoundRefusal{resp.StatusCode, resp.Header.Get("Retry-After"), m.Error.Code, m.Error.Data}
}

func wantSessionBound(table string) sessionBoundRefusal {
	return sessionBoundRefusal{Status: http.StatusServiceUnavailable, Code: -32603,
		Data: map[string]string{"reason": table + "_exhausted", "table": table}}
}

// TestFrontSessionBoundsRefusedAsTheirOwn: the legacy front's bounds of
// one minted session (its subscriptions, its GET streams) are not a
// caller's share: the caller may hold other sessions with room, and
// retrying after a while frees nothing. Each is refused as the stdio
// session's calls bound is, a full table of its own (503, data.reason
// and data.table naming the session's bound), and counted in
// caller_refusals_total under that table as "full"; the shared tables
// (bridge_subscriptions, bridge_streams) count no refusal, since their
// callers were refused nothing.
func TestFrontSessionBoundsRefusedAsTheirOwn(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler { return h }, func(f *LegacyFront) {
		f.Metrics = metrics.New(reg, "test")
		f.MaxSessionStreams = 1
	})
	sid, resp, body := frontInit(t, fx, victim)
	if sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	h := frontHeaders(victim, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	for i := range DefaultMaxFrontSubscriptions {
		if resp, body := post(t, fx.url, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"test://s/`+strconv.Itoa(i)+`"}}`, h); resp.StatusCode != 200 {
			t.Fatalf("subscribe %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body = post(t, fx.url, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"test://s/past"}}`, h)
	if diff := cmp.Diff(wantSessionBound("bridge_session_subscriptions"), readSessionBoundRefusal(t, resp, []byte(body))); diff != "" {
		t.Errorf("a session's subscription past its %d (-want +got):\n%s", DefaultMaxFrontSubscriptions, diff)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := func() (*http.Response, []byte) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fx.url, nil)
		for k, v := range frontHeaders(victim, "Accept", "text/event-stream", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if r, _ := get(); r.StatusCode != http.StatusOK {
		t.Fatalf("the session's first GET stream: HTTP %d", r.StatusCode)
	}
	r, b := get()
	if diff := cmp.Diff(wantSessionBound("bridge_session_streams"), readSessionBoundRefusal(t, r, b)); diff != "" {
		t.Errorf("a session's GET stream past its 1 (-want +got):\n%s", diff)
	}

	for _, c := range []struct {
		table, refusal string
		want           float64
	}{
		{"bridge_session_subscriptions", "full", 1},
		{"bridge_session_subscriptions", "share", 0},
		{"bridge_session_streams", "full", 1},
		{"bridge_session_streams", "share", 0},
		{tableFrontSubscriptions, "share", 0},
		{tableFrontSubscriptions, "full", 0},
		{tableFrontStreams, "share", 0},
		{tableFrontStreams, "full", 0},
	} {
		if got := metricstest.Refusals(t, reg, c.table, c.refusal); got != c.want {
			t.Errorf("caller_refusals_total{table=%s,refusal=%s} = %v, want %v", c.table, c.refusal, got, c.want)
		}
	}
}
