package methods_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// boundRefusal is what a refusal of a place says: its status, whether it
// has a Retry-After, its code and data.
type boundRefusal struct {
	Status   int
	HasRetry bool
	Code     int
	Data     map[string]string
}

// TestSubscribeBoundsRefused: the legacy subscriptions to the sidecar's
// own skill URIs are refused as every bounded table refuses
// (docs/security.md), each counted in caller_refusals_total:
//   - with notify_subscriptions full (every session holding one
//     streaming, so none gives way), HTTP 503 without Retry-After,
//     data.reason notify_subscriptions_exhausted, data.table
//     notify_subscriptions, refusal="full";
//   - past one session's own bound, as the other sessions' own bounds
//     (stdio_session_calls, bridge_session_subscriptions): HTTP 503,
//     notify_session_subscriptions_exhausted of
//     notify_session_subscriptions, refusal="full" of that table.
func TestSubscribeBoundsRefused(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	hub := notify.New(notify.Options{MaxSubscriptions: 1, MaxSubscriptionsAll: 2, SharePercent: 50, Metrics: metrics.New(reg, "test")}) // a share of 1
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginPDF())
	snap, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }, Subscriptions: hub})
	sub := func(addr, sid, uri string) boundRefusal {
		t.Helper()
		r, msg := localRequest(t, false, "resources/subscribe", map[string]any{"uri": uri})
		r.RemoteAddr = addr + ":40000"
		r.Header.Set("Mcp-Session-Id", sid)
		w := httptest.NewRecorder()
		if !serveLocal(h, w, r, msg) {
			t.Fatalf("%s %s: forwarded, want the sidecar's answer", addr, uri)
		}
		var rep struct {
			Error struct {
				Code int               `json:"code"`
				Data map[string]string `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%s %s: %d %q, want one JSON-RPC reply", addr, uri, w.Code, w.Body)
		}
		return boundRefusal{w.Code, w.Header().Get("Retry-After") != "", rep.Error.Code, rep.Error.Data}
	}
	// Sessions A, B and C stream, so none of their subscriptions is
	// evicted to make room.
	for _, sid := range []string{"A", "B", "C"} {
		var w discard
		s, _ := hub.Open(notify.Filter{Session: sid}, w, nil)
		if s == nil {
			t.Fatalf("session %s's stream refused", sid)
		}
		defer s.Close()
	}
	ok := boundRefusal{Status: http.StatusOK}
	if got := sub("192.0.2.1", "A", "skill://pdf-processing/SKILL.md"); !cmp.Equal(got, ok) {
		t.Fatalf("A's first subscription: %+v", got)
	}
	if got := sub("192.0.2.2", "B", "skill://pdf-processing/SKILL.md"); !cmp.Equal(got, ok) {
		t.Fatalf("B's first subscription: %+v", got)
	}
	want := boundRefusal{http.StatusServiceUnavailable, false, -32603, map[string]string{"reason": "notify_subscriptions_exhausted", "table": "notify_subscriptions"}}
	if diff := cmp.Diff(want, sub("192.0.2.3", "C", "skill://pdf-processing/SKILL.md")); diff != "" {
		t.Errorf("a subscription with notify_subscriptions full (-want +got):\n%s", diff)
	}
	if got := sub("192.0.2.1", "A", "skill://pdf-processing/SKILL.md"); !cmp.Equal(got, ok) {
		t.Fatalf("A's subscription again: %+v, want no error", got)
	}
	hub.Unsubscribe("B", "skill://pdf-processing/SKILL.md")
	want = boundRefusal{http.StatusServiceUnavailable, false, -32603, map[string]string{"reason": "notify_session_subscriptions_exhausted", "table": "notify_session_subscriptions"}}
	if diff := cmp.Diff(want, sub("192.0.2.4", "A", "skill://pdf-processing/forms.md")); diff != "" {
		t.Errorf("a session's subscription past its 1 (-want +got):\n%s", diff)
	}
	mfs := metricstest.Gather(t, reg)
	for _, c := range []struct {
		table, refusal string
		want           float64
	}{
		{"notify_subscriptions", "full", 1},
		{"notify_subscriptions", "share", 0},
		{"notify_session_subscriptions", "full", 1},
		{"notify_session_subscriptions", "share", 0},
	} {
		if got, ok := metricstest.Sample(mfs, "skills_sidecar_caller_refusals_total", map[string]string{"table": c.table, "refusal": c.refusal}); got != c.want || !ok {
			t.Errorf("caller_refusals_total{table=%s,refusal=%s} = %v (exists %v), want %v", c.table, c.refusal, got, ok, c.want)
		}
	}
}

// discard is a stream's writer that keeps nothing.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
