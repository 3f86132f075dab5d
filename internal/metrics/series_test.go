package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkRequest is what a forwarded request costs the metrics: its
// count and duration, and the upstream's time to headers.
func BenchmarkRequest(b *testing.B) {
	m := New(prometheus.NewRegistry(), "bench")
	b.ReportAllocs()
	for b.Loop() {
		m.UpstreamResponse("tools/call", time.Millisecond)
		m.Request("tools/call", "upstream", 200, 2*time.Millisecond)
	}
}

// TestRequestSeriesBoundToTheirLabels records one request of every method
// label, route and outcome (and of a method and a route outside the
// fixed sets) in turn, and then each once more: every label set counts
// exactly what was recorded under it, with its duration, and the
// upstream histogram likewise. Children bound on first use must never
// answer for another label set.
func TestRequestSeriesBoundToTheirLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, "test")
	statuses := map[int]string{0: "aborted", 204: "2xx", 302: "3xx", 404: "4xx", 502: "5xx"}
	methods := append(methodLabels[:len(methodLabels)-1:len(methodLabels)-1], "no/such/method")
	routes := []string{"local", "upstream", "elsewhere"}
	want := map[string]float64{}
	upWant := map[string]float64{}
	for round := range 2 {
		for _, method := range methods {
			label := method
			if method == "no/such/method" {
				label = "other"
			}
			for _, route := range routes {
				for status, outcome := range statuses {
					m.Request(method, route, status, time.Duration(round+1)*time.Millisecond)
					want[label+" "+route+" "+outcome]++
				}
			}
			m.UpstreamResponse(method, time.Millisecond)
			upWant[label]++
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	gotSum := map[string]float64{}
	upGot := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range mt.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			key := l["method"] + " " + l["route"] + " " + l["outcome"]
			switch f.GetName() {
			case Namespace + "_requests_total":
				got[key] = mt.GetCounter().GetValue()
			case Namespace + "_request_duration_seconds":
				if c := float64(mt.GetHistogram().GetSampleCount()); c != want[key] {
					t.Errorf("request_duration_seconds{%s}: %v samples, want %v", key, c, want[key])
				}
				gotSum[key] = mt.GetHistogram().GetSampleSum()
			case Namespace + "_upstream_response_seconds":
				upGot[l["method"]] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("requests_total{%s} = %v, want %v", k, got[k], n)
		}
		// One sample of 1 ms and one of 2 ms per round and label set.
		if s := gotSum[k]; s < 0.003*n/2-1e-9 || s > 0.003*n/2+1e-9 {
			t.Errorf("request_duration_seconds{%s} sums %v s, want %v", k, s, 0.003*n/2)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d requests_total series, want %d", len(got), len(want))
	}
	for k, n := range upWant {
		if upGot[k] != n {
			t.Errorf("upstream_response_seconds{method=%q}: %v samples, want %v", k, upGot[k], n)
		}
	}
	if len(upGot) != len(upWant) {
		t.Errorf("%d upstream_response_seconds series, want %d", len(upGot), len(upWant))
	}
}
