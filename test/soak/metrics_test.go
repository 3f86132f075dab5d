package main

import (
	"bufio"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func parseCases() map[string]struct {
	in   string
	want Metrics
	err  error
} {
	type tc = struct {
		in   string
		want Metrics
		err  error
	}
	return map[string]tc{
		"gauges and comments": {in: "# HELP go_goroutines Number.\n# TYPE go_goroutines gauge\ngo_goroutines 42\n\nprocess_open_fds 17\n",
			want: Metrics{{Name: "go_goroutines", Value: 42}, {Name: "process_open_fds", Value: 17}}},
		"labels and escapes": {in: `skills_sidecar_catalog_reloads_total{outcome="success"} 3` + "\n" +
			`x{a="q\"uote",b="back\\slash",c="new\nline"} 1.5e3 1700000000000` + "\n",
			want: Metrics{
				{Name: "skills_sidecar_catalog_reloads_total", Labels: map[string]string{"outcome": "success"}, Value: 3},
				{Name: "x", Labels: map[string]string{"a": `q"uote`, "b": `back\slash`, "c": "new\nline"}, Value: 1500},
			}},
		"trailing comma and spaces": {in: `y{ a="1", } +Inf` + "\n",
			want: Metrics{{Name: "y", Labels: map[string]string{"a": "1"}, Value: math.Inf(1)}}},
		"empty labels":        {in: "z{} 0\n", want: Metrics{{Name: "z", Labels: map[string]string{}, Value: 0}}},
		"no value":            {in: "go_goroutines\n", err: errMetricsSyntax},
		"bad value":           {in: "go_goroutines many\n", err: errMetricsSyntax},
		"unterminated label":  {in: `y{a="1} 2` + "\n", err: errMetricsSyntax},
		"label without quote": {in: "y{a=1} 2\n", err: errMetricsSyntax},
		"too many fields":     {in: "y 1 2 3\n", err: errMetricsSyntax},
	}
}

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	for name, tc := range parseCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMetrics(strings.NewReader(tc.in))
			if !errors.Is(err, tc.err) {
				t.Fatalf("ParseMetrics error = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseMetrics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScrapeRealRegistry reads what client_golang serves, with the Go and
// process collectors the sidecar registers, through the Scraper.
func TestScrapeRealRegistry(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the process collector's fd and RSS gauges are Linux-only")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skills_sidecar_catalog_reloads_total", Help: "h"}, []string{"outcome"})
	streams := prometheus.NewGauge(prometheus.GaugeOpts{Name: "skills_sidecar_active_streams", Help: "h"})
	reg.MustRegister(reloads, streams)
	reloads.WithLabelValues("success").Add(4)
	reloads.WithLabelValues("failure").Add(1)
	streams.Set(2)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)

	sc := &Scraper{URL: srv.URL, Client: srv.Client()}
	s, err := sc.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Goroutines < 1 || s.FDs < 3 || s.RSSBytes < 1<<20 {
		t.Errorf("Scrape = %+v, want goroutines, fds and RSS of a live process", s)
	}
	if s.ReloadsOK != 4 || s.ReloadsFailed != 1 || s.ActiveStreams != 2 {
		t.Errorf("Scrape = %+v, want reloads 4/1 and 2 active streams", s)
	}
	peak, last, ok, failed := sc.Peak()
	wantPeak := Sample{Goroutines: s.Goroutines, FDs: s.FDs, RSSBytes: s.RSSBytes, ActiveStreams: 2}
	if peak != wantPeak || last != s || ok != 1 || failed != 0 {
		t.Errorf("Peak = %+v, %+v, %d, %d; want peak %+v, last the one sample, 1 ok, 0 failed", peak, last, ok, failed, wantPeak)
	}
}

// TestScrapeFails: a page without the process gauges, and a broken page,
// are errors and counted, never a zero sample taken for a baseline.
func TestScrapeFails(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"no process collector": "go_goroutines 3\n",
		"broken":               "go_goroutines {\n",
	}
	for name, page := range pages {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(page)) }))
			t.Cleanup(srv.Close)
			sc := &Scraper{URL: srv.URL, Client: srv.Client()}
			if _, err := sc.Scrape(context.Background()); !errors.Is(err, errMetricsSyntax) {
				t.Errorf("Scrape error = %v, want errMetricsSyntax", err)
			}
			if _, _, ok, failed := sc.Peak(); ok != 0 || failed != 1 {
				t.Errorf("Peak counts = %d ok, %d failed; want 0, 1", ok, failed)
			}
		})
	}
}

func TestMetricsValue(t *testing.T) {
	t.Parallel()
	m := Metrics{
		{Name: "r", Labels: map[string]string{"outcome": "success", "x": "1"}, Value: 2},
		{Name: "r", Labels: map[string]string{"outcome": "success", "x": "2"}, Value: 3},
		{Name: "r", Labels: map[string]string{"outcome": "failure"}, Value: 7},
	}
	tests := map[string]struct {
		name  string
		match map[string]string
		want  float64
		found bool
	}{
		"sum of matches": {"r", map[string]string{"outcome": "success"}, 5, true},
		"all":            {"r", nil, 12, true},
		"no label match": {"r", map[string]string{"outcome": "other"}, 0, false},
		"no name":        {"q", nil, 0, false},
	}
	for name, tc := range tests {
		got, found := m.Value(tc.name, tc.match)
		if got != tc.want || found != tc.found {
			t.Errorf("%s: Value(%q, %v) = %v, %v; want %v, %v", name, tc.name, tc.match, got, found, tc.want, tc.found)
		}
	}
}

// FuzzParseMetrics: any page parses or fails with errMetricsSyntax, never
// panics, and every parsed series has a name.
func FuzzParseMetrics(f *testing.F) {
	for _, tc := range parseCases() {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseMetrics(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, errMetricsSyntax) && !errors.Is(err, bufio.ErrTooLong) {
				t.Errorf("ParseMetrics error = %v", err)
			}
			return
		}
		for _, s := range m {
			if s.Name == "" {
				t.Errorf("series without a name: %+v", s)
			}
		}
	})
}
