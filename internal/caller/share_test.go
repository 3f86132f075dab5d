package caller

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

func TestShare(t *testing.T) {
	t.Parallel()
	tests := []struct{ capacity, percent, want int }{
		{256, 25, 64}, {64, 25, 16}, {8, 25, 2}, {3, 25, 1}, {1, 25, 1}, {0, 25, 1},
		{10, 100, 10}, {10, 1, 1}, {100, 0, 25}, {100, 101, 25},
	}
	for _, tt := range tests {
		if got := Share(tt.capacity, tt.percent); got != tt.want {
			t.Errorf("Share(%d, %d) = %d, want %d", tt.capacity, tt.percent, got, tt.want)
		}
	}
}

// TestTable: one caller fills its share and is refused 429 while another
// is served; the table full refuses everyone 503; each refusal counted.
func TestTable(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test")
	tab := NewTable(TableOptions{Name: "test_table", Cap: 8, SharePercent: 25, RetryAfter: 1500 * time.Millisecond, Metrics: m})
	a, b := gateOff.Of(req("192.0.2.1:1")), gateOff.Of(req("192.0.2.2:1"))
	for i := range 2 {
		if err := tab.Acquire(a, nil); err != nil {
			t.Fatalf("A's place %d: %v", i, err)
		}
	}
	var r *Refusal
	if err := tab.Acquire(a, nil); !errors.As(err, &r) || r.Full {
		t.Fatalf("A past its share of 2: %v, want a refusal over its share", err)
	}
	if diff := cmp.Diff(&reply.Error{Status: http.StatusTooManyRequests, Code: reply.CodeInternalError, RetryAfter: 2,
		Message: "this caller holds its share of test table (2 of 8); try again later",
		Data:    map[string]string{"reason": "caller_share_exhausted", "table": "test_table"}}, r.Reply()); diff != "" {
		t.Errorf("the refusal's reply (-want +got):\n%s", diff)
	}
	if err := tab.Acquire(b, nil); err != nil {
		t.Fatalf("B while A holds its share: %v", err)
	}
	// makeRoom frees one of A's own places.
	if err := tab.Acquire(a, func(own bool) bool {
		if !own {
			t.Error("makeRoom asked for another caller's place")
		}
		tab.Release(a)
		return true
	}); err != nil {
		t.Fatalf("A with room made: %v", err)
	}
	// Six more callers fill the table.
	for i := range 5 {
		if err := tab.Acquire(gateOff.Of(req("198.51.100."+string(rune('1'+i))+":1")), nil); err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if got := tab.Len(); got != 8 {
		t.Fatalf("Len() = %d, want 8", got)
	}
	err := tab.Acquire(gateOff.Of(req("203.0.113.1:1")), nil)
	if !errors.As(err, &r) || !r.Full || r.Reply().Status != http.StatusServiceUnavailable || r.Reason() != "test_table_exhausted" || r.Reply().RetryAfter != 0 {
		t.Fatalf("a new caller with the table full: %v, want 503 test_table_exhausted", err)
	}
	tab.Release(b)
	tab.Release(b) // a second release of nothing held changes nothing
	if got := tab.Held(b); got != 0 || tab.Len() != 7 {
		t.Errorf("after B's release: Held(B) = %d, Len() = %d, want 0 and 7", got, tab.Len())
	}
	for _, c := range []struct {
		refusal string
		want    float64
	}{{"share", 1}, {"full", 1}} {
		got := metricstest.Refusals(t, reg, "test_table", c.refusal)
		if got != c.want {
			t.Errorf("caller_refusals_total{table=test_table,refusal=%s} = %v, want %v", c.refusal, got, c.want)
		}
	}
}
