package metrics_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// sidecar starts the sidecar as the binary assembles it (no plugin, no
// gate, no overlay) in front of upstream; it returns its MCP URL, its
// registry and its metrics.
func sidecar(t *testing.T, upstream http.Handler) (string, *prometheus.Registry, *metrics.Metrics) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	s := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles = "none", "off"
	}})
	return s.URL, s.Registry, s.Metrics
}

// post sends body (with the header name, value pairs hdr) and returns
// the response, its body read.
func post(t *testing.T, u, body string, hdr ...string) *http.Response {
	t.Helper()
	resp, _ := sidecartest.Post(t, u, body, sidecartest.Header(hdr...))
	return resp
}

// value returns the value of the series of name whose labels include want;
// histograms give their sample count.
func value(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return sum
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

func TestTrafficMovesMetrics(t *testing.T) {
	t.Parallel()
	u, reg, _ := sidecar(t, demo.Handler(nil))
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp := post(t, u, init)
	sid := resp.Header.Get("Mcp-Session-Id")
	post(t, u, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid)
	for i := range 3 {
		post(t, u, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, i+2), "Mcp-Session-Id", sid)
	}
	post(t, u, `not json`)

	// The counters, series by series: every series there is, no other.
	if err := testutil.GatherAndCompare(reg, exposition(t, reg, "skills_sidecar_requests_total", "counter",
		`{method="initialize",outcome="2xx",route="upstream"} 1`,
		`{method="invalid",outcome="4xx",route="local"} 1`,
		`{method="notification",outcome="2xx",route="upstream"} 1`,
		`{method="tools/call",outcome="2xx",route="upstream"} 3`,
	), "skills_sidecar_requests_total"); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(reg, exposition(t, reg, "skills_sidecar_declarations_injected_total", "counter",
		`{era="legacy"} 1`, `{era="modern"} 0`), "skills_sidecar_declarations_injected_total"); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(reg, exposition(t, reg, "skills_sidecar_build_info", "gauge",
		`{goversion="`+runtime.Version()+`",version="test"} 1`), "skills_sidecar_build_info"); err != nil {
		t.Error(err)
	}
	// Histograms: their sample counts (their buckets are the clock's).
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"skills_sidecar_request_duration_seconds", map[string]string{"method": "tools/call", "route": "upstream", "outcome": "2xx"}, 3},
		{"skills_sidecar_request_duration_seconds", map[string]string{"method": "invalid", "route": "local", "outcome": "4xx"}, 1},
		{"skills_sidecar_upstream_response_seconds", map[string]string{"method": "tools/call"}, 3},
	} {
		if got := value(t, reg, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

// exposition is the text exposition of metric name (of type typ) with the
// given series ("{labels} value", labels in name order), for
// testutil.GatherAndCompare. Its HELP line is the registered one: what
// these tests judge is the series and their values, not the wording.
func exposition(t *testing.T, reg *prometheus.Registry, name, typ string, series ...string) io.Reader {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	help := ""
	for _, mf := range mfs {
		if mf.GetName() == name {
			help = mf.GetHelp()
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	for _, s := range series {
		b.WriteString(name + s + "\n")
	}
	return strings.NewReader(b.String())
}

func TestActiveStreamsGauge(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	u, reg, _ := sidecar(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if got := value(t, reg, "skills_sidecar_active_streams", nil); got != 1 {
		t.Errorf("active_streams with one open GET = %v, want 1", got)
	}
	close(release)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	testwait.For(t, time.Minute, func() bool { return value(t, reg, "skills_sidecar_active_streams", nil) == 0 }, "active_streams to be 0 after the stream ended")
}

// upstreamStatuses are the HTTP statuses the cardinality test's upstream
// cycles through: more distinct codes than there are outcome classes.
var upstreamStatuses = []int{200, 201, 202, 400, 401, 404, 409, 429, 500, 502, 503}

// TestCardinalityIsBounded sends 10,000 requests with distinct unknown
// methods, tool names and URIs, answered with many distinct HTTP statuses:
// the number of series must not grow with them, and the outcome label of
// both the counter and the latency histogram takes status classes only.
func TestCardinalityIsBounded(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	u, reg, _ := sidecar(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(upstreamStatuses[int(n.Add(1))%len(upstreamStatuses)])
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	// series counts the sidecar's series but those of the caller tables,
	// which exist from the start, two per table the assembly builds
	// (counted by tables).
	tables := 0
	series := func() int {
		mfs, _ := reg.Gather()
		n := 0
		for _, mf := range mfs {
			switch {
			case mf.GetName() == metrics.Namespace+"_caller_refusals_total":
				tables = len(mf.GetMetric()) / 2
			case strings.HasPrefix(mf.GetName(), metrics.Namespace):
				n += len(mf.GetMetric())
			}
		}
		return n
	}
	for i := range 10000 {
		var body string
		switch i % 3 {
		case 0:
			body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"x/unknown-%d","params":{}}`, i)
		case 1:
			body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool-%d"}}`, i)
		default:
			body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///%d"}}`, i)
		}
		post(t, u, body)
		if i == 99 {
			t.Logf("series after 100 requests: %d", series())
		}
	}
	// The constant grows only with fixed label sets (the stdio series
	// added ten, host-compat six: collisions by kind, two notification
	// methods by outcome); what it must never do is follow the requests.
	if n := series(); n > 81 {
		t.Errorf("series after 10,000 distinct requests = %d (besides the caller tables'), want a small constant (<= 81)", n)
	}
	// Twelve: the eight tables callers share, and four bounds of one
	// session's own (the legacy front's two, the notification hub's two).
	if tables > 12 {
		t.Errorf("caller refusal series for %d tables after 10,000 distinct requests, want the few tables the assembly builds (<= 12)", tables)
	}
	if got := value(t, reg, "skills_sidecar_requests_total", map[string]string{"method": "other"}); got < 3333 {
		t.Errorf("unknown methods counted as other = %v, want >= 3333", got)
	}
	classes := map[string]bool{"2xx": true, "3xx": true, "4xx": true, "5xx": true, "aborted": true}
	seen := map[string]bool{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		name := mf.GetName()
		if name != "skills_sidecar_requests_total" && name != "skills_sidecar_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "outcome" {
					continue
				}
				seen[name] = true
				if !classes[l.GetValue()] {
					t.Errorf("%s has outcome %q, want a status class or aborted", name, l.GetValue())
				}
			}
		}
	}
	for _, name := range []string{"skills_sidecar_requests_total", "skills_sidecar_request_duration_seconds"} {
		if !seen[name] {
			t.Errorf("%s has no outcome label", name)
		}
	}
}

func TestMethodLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"skills/list": "skills/list", "tools/call": "tools/call", "x/y": "other", "": "other", "GET": "GET"} {
		if got := metrics.MethodLabel(in); got != want {
			t.Errorf("MethodLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	m.Request("x", "local", 200, time.Second) // must not panic
	m.DeclarationInjected("legacy")
	m.StreamOpened()
	m.CatalogReload(true, time.Now(), 1, 1, nil)
}

// TestAmbiguousFrontmatterGauge: the SKILL.md files whose frontmatter YAML
// 1.1 hosts read differently are counted by severity, both series always
// present, and the gauge follows the catalog now served.
func TestAmbiguousFrontmatterGauge(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test")
	m.CatalogReload(true, time.Now(), 1, 0, []metrics.Problem{
		{Kind: "frontmatter", Severity: "skip", Ambiguous: true},
		{Kind: "frontmatter", Severity: "skip", Ambiguous: true},
		{Kind: "frontmatter", Severity: "skip"},
		{Kind: "frontmatter", Severity: "warn", Ambiguous: true},
	})
	const name = "skills_sidecar_catalog_frontmatter_ambiguous"
	if err := testutil.GatherAndCompare(reg, exposition(t, reg, name, "gauge", `{severity="skip"} 2`, `{severity="warn"} 1`), name); err != nil {
		t.Error(err)
	}
	m.CatalogReload(true, time.Now(), 1, 0, nil)
	if err := testutil.GatherAndCompare(reg, exposition(t, reg, name, "gauge", `{severity="skip"} 0`, `{severity="warn"} 0`), name); err != nil {
		t.Error(err)
	}
}

// TestNotificationLabels: notifications_total counts by method and outcome,
// and a method outside the sidecar's five grows no series.
func TestNotificationLabels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test")
	m.Notification("notifications/resources/updated", false)
	m.Notification("notifications/resources/updated", true)
	m.Notification("notifications/resources/updated", true)
	m.Notification("notifications/agents/list_changed", false)
	m.Notification("notifications/tools/list_changed", false)
	m.Notification("notifications/logging/message", false)
	m.Notification("x", true)
	// Exactly the ten series of the sidecar's five methods:
	// "logging/message" and "x" grew none.
	if err := testutil.GatherAndCompare(reg, exposition(t, reg, "skills_sidecar_notifications_total", "counter",
		`{method="agents/list_changed",outcome="coalesced"} 0`,
		`{method="agents/list_changed",outcome="sent"} 1`,
		`{method="prompts/list_changed",outcome="coalesced"} 0`,
		`{method="prompts/list_changed",outcome="sent"} 0`,
		`{method="resources/list_changed",outcome="coalesced"} 0`,
		`{method="resources/list_changed",outcome="sent"} 0`,
		`{method="resources/updated",outcome="coalesced"} 2`,
		`{method="resources/updated",outcome="sent"} 1`,
		`{method="tools/list_changed",outcome="coalesced"} 0`,
		`{method="tools/list_changed",outcome="sent"} 1`,
	), "skills_sidecar_notifications_total"); err != nil {
		t.Error(err)
	}
}
