package metricstest

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

// fatal records what a helper reported instead of ending the test.
type fatal struct{ msgs []string }

func (f *fatal) Helper()                        {}
func (f *fatal) Fatal(args ...any)              { f.msgs = append(f.msgs, fmt.Sprint(args...)) }
func (f *fatal) Fatalf(format string, a ...any) { f.msgs = append(f.msgs, fmt.Sprintf(format, a...)) }

// TestSampleMatchesTheExactLabelSet: a series is found by its whole label
// set, never by a part of it, and its value is the one counted.
func TestSampleMatchesTheExactLabelSet(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"a", "b"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	reg.MustRegister(c, g)
	c.WithLabelValues("x", "y").Add(3)
	c.WithLabelValues("x", "z").Add(5)
	g.Set(7)
	mfs := Gather(t, reg)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
		found  bool
	}{
		{"c_total", map[string]string{"a": "x", "b": "y"}, 3, true},
		{"c_total", map[string]string{"a": "x", "b": "z"}, 5, true},
		{"c_total", map[string]string{"a": "x"}, 0, false},                     // a part of a label set
		{"c_total", map[string]string{"a": "x", "b": "y", "c": "q"}, 0, false}, // more than it
		{"c_total", map[string]string{"a": "x", "b": "w"}, 0, false},
		{"g", nil, 7, true},
		{"absent", nil, 0, false},
	} {
		if got, ok := Sample(mfs, tc.name, tc.labels); got != tc.want || ok != tc.found {
			t.Errorf("Sample(%s, %v) = %v, %v; want %v, %v", tc.name, tc.labels, got, ok, tc.want, tc.found)
		}
	}
}

// TestRefusalsFailsOnAMissingSeries: a table whose series does not exist
// is a failure, not a zero.
func TestRefusalsFailsOnAMissingSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.Namespace + "_caller_refusals_total"}, []string{"table", "refusal"})
	reg.MustRegister(v)
	v.WithLabelValues("t", "share").Add(2)
	var f fatal
	if got := Refusals(&f, reg, "t", "share"); got != 2 || len(f.msgs) != 0 {
		t.Errorf("Refusals(t, share) = %v, reports %q; want 2 and none", got, f.msgs)
	}
	if Refusals(&f, reg, "t", "full"); len(f.msgs) != 1 {
		t.Errorf("Refusals of a series that does not exist reported %q, want one failure", f.msgs)
	}
}
