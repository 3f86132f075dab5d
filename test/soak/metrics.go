package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errMetricsSyntax is wrapped by every line ParseMetrics cannot read.
var errMetricsSyntax = errors.New("soak: metrics syntax")

// Series is one sample of the Prometheus text exposition format: a metric
// name, its labels and its value.
type Series struct {
	// Name is the metric name.
	Name string
	// Labels are the series' labels; nil when the line has no braces.
	Labels map[string]string
	// Value is the sample value.
	Value float64
}

// Metrics is a parsed /metrics page.
type Metrics []Series

// ParseMetrics reads the Prometheus text exposition format (version 0.0.4):
// comment and blank lines are skipped; each other line is
// `name{label="value",...} value [timestamp]`. Label values may hold the
// escapes \\, \" and \n.
func ParseMetrics(r io.Reader) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSeries(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}

func parseSeries(line string) (Series, error) {
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return Series{}, fmt.Errorf("%w: no value in %q", errMetricsSyntax, line)
	}
	s := Series{Name: line[:end]}
	rest := line[end:]
	if rest[0] == '{' {
		labels, after, err := parseLabels(rest[1:])
		if err != nil {
			return Series{}, err
		}
		s.Labels, rest = labels, after
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return Series{}, fmt.Errorf("%w: want a value and an optional timestamp after %q", errMetricsSyntax, s.Name)
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return Series{}, fmt.Errorf("%w: value of %s: %q", errMetricsSyntax, s.Name, fields[0])
	}
	s.Value = v
	return s, nil
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// parseLabels reads `a="x",b="y"}` and returns the labels and what follows
// the closing brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return nil, "", fmt.Errorf("%w: label in %q", errMetricsSyntax, s)
		}
		name := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(s[i])
		}
		if i >= len(s) {
			return nil, "", fmt.Errorf("%w: unterminated value of label %q", errMetricsSyntax, name)
		}
		labels[name] = val.String()
		s = strings.TrimLeft(s[i+1:], " ")
		s = strings.TrimPrefix(s, ",")
	}
}

// Value sums the series named name whose labels include every pair in
// match (nil matches all), and reports whether any matched.
func (m Metrics) Value(name string, match map[string]string) (float64, bool) {
	var sum float64
	var found bool
	for _, s := range m {
		if s.Name != name || !hasLabels(s.Labels, match) {
			continue
		}
		sum += s.Value
		found = true
	}
	return sum, found
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Sample is what one scrape of the sidecar's /metrics says about its
// resources.
type Sample struct {
	// Goroutines is go_goroutines.
	Goroutines int `json:"goroutines"`
	// FDs is process_open_fds.
	FDs int `json:"fds"`
	// RSSBytes is process_resident_memory_bytes.
	RSSBytes int64 `json:"rss_bytes"`
	// ActiveStreams is skills_sidecar_active_streams.
	ActiveStreams int `json:"active_streams"`
	// ReloadsOK and ReloadsFailed are skills_sidecar_catalog_reloads_total
	// by outcome.
	ReloadsOK     int `json:"reloads_ok"`
	ReloadsFailed int `json:"reloads_failed"`
}

// SampleOf picks the soak's numbers out of a parsed page; it fails when one
// of the resource gauges is missing (the process collector is Linux-only).
func SampleOf(m Metrics) (Sample, error) {
	var s Sample
	for _, g := range []struct {
		name string
		into func(float64)
	}{
		{"go_goroutines", func(v float64) { s.Goroutines = int(v) }},
		{"process_open_fds", func(v float64) { s.FDs = int(v) }},
		{"process_resident_memory_bytes", func(v float64) { s.RSSBytes = int64(v) }},
	} {
		v, ok := m.Value(g.name, nil)
		if !ok {
			return Sample{}, fmt.Errorf("%w: no %s", errMetricsSyntax, g.name)
		}
		g.into(v)
	}
	v, _ := m.Value("skills_sidecar_active_streams", nil)
	s.ActiveStreams = int(v)
	v, _ = m.Value("skills_sidecar_catalog_reloads_total", map[string]string{"outcome": "success"})
	s.ReloadsOK = int(v)
	v, _ = m.Value("skills_sidecar_catalog_reloads_total", map[string]string{"outcome": "failure"})
	s.ReloadsFailed = int(v)
	return s, nil
}

// Scraper reads the sidecar's /metrics and keeps the peaks it has seen.
type Scraper struct {
	// URL is the /metrics address.
	URL string
	// Client makes the requests; it should not keep connections alive, so
	// that the scraper's own connection is not mistaken for a leak.
	Client *http.Client

	mu     sync.Mutex
	peak   Sample
	last   Sample
	scrape int
	fails  int
}

// Scrape reads /metrics once and records the sample's peaks.
func (s *Scraper) Scrape(ctx context.Context) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape: %w", err)
	}
	sample, err := s.fetch(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.fails++
		return Sample{}, err
	}
	s.scrape++
	s.last = sample
	s.peak.Goroutines = max(s.peak.Goroutines, sample.Goroutines)
	s.peak.FDs = max(s.peak.FDs, sample.FDs)
	s.peak.RSSBytes = max(s.peak.RSSBytes, sample.RSSBytes)
	s.peak.ActiveStreams = max(s.peak.ActiveStreams, sample.ActiveStreams)
	return sample, nil
}

func (s *Scraper) fetch(req *http.Request) (Sample, error) {
	resp, err := s.Client.Do(req)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return Sample{}, fmt.Errorf("scrape: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("scrape: %s", resp.Status)
	}
	m, err := ParseMetrics(bytes.NewReader(body))
	if err != nil {
		return Sample{}, fmt.Errorf("scrape: %w", err)
	}
	return SampleOf(m)
}

// Run scrapes every interval until ctx is done.
func (s *Scraper) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, _ = s.Scrape(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Peak returns the highest values seen, the last sample, and how many
// scrapes succeeded and failed.
func (s *Scraper) Peak() (peak, last Sample, ok, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.last, s.scrape, s.fails
}
