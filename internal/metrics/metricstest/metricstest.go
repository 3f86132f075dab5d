// Package metricstest reads what a Prometheus registry holds, for tests of
// any package that counts into one: the families by name, one series by
// its exact label set, and the sidecar's refusal counter by table. It
// imports nothing of the sidecar's but the metric names, so the packages
// that own the counted tables can use it without an import cycle.
package metricstest

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

// TB is the part of testing.TB these helpers use.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Gather reads every family of reg, by name.
func Gather(t TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	list, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs := make(map[string]*dto.MetricFamily, len(list))
	for _, mf := range list {
		mfs[mf.GetName()] = mf
	}
	return mfs
}

// Sample returns the value of the series of name whose label set is exactly
// labels (a histogram's sample count), and whether the family and the
// series exist.
func Sample(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// Refusals is caller_refusals_total{table, refusal} in reg; a series that
// does not exist fails the test (every table's series exist from the
// start, at 0).
func Refusals(t TB, reg prometheus.Gatherer, table, refusal string) float64 {
	t.Helper()
	v, ok := Sample(Gather(t, reg), metrics.Namespace+"_caller_refusals_total", map[string]string{"table": table, "refusal": refusal})
	if !ok {
		t.Fatalf("no caller_refusals_total series of table %s, refusal %s", table, refusal)
	}
	return v
}
