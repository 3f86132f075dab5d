package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/inject"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

var metricName = regexp.MustCompile(`\bskills_sidecar_[a-z_]+\b`)

// unknownMetrics returns the skills_sidecar_* names in text that the
// registry does not expose (histogram series suffixes allowed).
func unknownMetrics(text string, known map[string]bool) []string {
	var out []string
	for _, n := range metricName.FindAllString(text, -1) {
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && known[b] {
				base = b
			}
		}
		if !known[base] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	// The sidecar's registry and the injector's (which the chart's alerts
	// also query; its own registry, since both add the Go collectors).
	reg, injector := prometheus.NewRegistry(), prometheus.NewRegistry()
	metrics.New(reg, "test")
	inject.NewWebhookMetrics(injector, func() time.Time { return time.Time{} })
	known := map[string]bool{}
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, r := range []*prometheus.Registry{reg, injector} {
		ch := make(chan *prometheus.Desc, 64)
		go func() { r.Describe(ch); close(ch) }()
		for d := range ch {
			if m := re.FindStringSubmatch(d.String()); m != nil {
				known[m[1]] = true
			}
		}
	}
	return known
}

// TestDashboardAndAlertsUseRealMetrics keeps the chart's Grafana dashboard
// and PrometheusRule in step with the registry: every metric they query
// exists.
func TestDashboardAndAlertsUseRealMetrics(t *testing.T) {
	t.Parallel()
	known := knownMetrics(t)
	if !known["skills_sidecar_requests_total"] {
		t.Fatalf("registry descriptions not read: %v", known)
	}
	for _, path := range []string{"../../charts/skills-sidecar/files/dashboard.json", "../../charts/skills-sidecar/templates/prometheusrule.yaml"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(path, ".json") && !json.Valid(b) {
			t.Errorf("%s is not valid JSON", path)
		}
		if len(metricName.FindAllString(string(b), -1)) == 0 {
			t.Errorf("%s queries no skills_sidecar metric", path)
		}
		if bad := unknownMetrics(string(b), known); len(bad) > 0 {
			t.Errorf("%s queries metrics the sidecar does not expose: %v", path, bad)
		}
	}
	// The check must be able to fail.
	if bad := unknownMetrics(`rate(skills_sidecar_request_total[5m])`, known); len(bad) != 1 {
		t.Errorf("unknownMetrics missed a misspelt metric: %v", bad)
	}
}

// dashboardProblems reports whether every latency quantile over forwarded requests
// in the dashboard leaves out GET and subscriptions/listen streams, whose
// durations are stream lifetimes, not latencies; and whether every panel
// showing process memory is in bytes.
func dashboardProblems(b []byte) []string {
	var d struct {
		Panels []struct {
			Title       string
			FieldConfig struct{ Defaults struct{ Unit string } }
			Targets     []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			if strings.Contains(t.Expr, "histogram_quantile") && strings.Contains(t.Expr, `route="upstream"`) &&
				!strings.Contains(t.Expr, `method!~"GET|subscriptions/listen"`) {
				out = append(out, p.Title+": a latency quantile that counts stream lifetimes")
			}
			if strings.Contains(t.Expr, "_memory_bytes") && p.FieldConfig.Defaults.Unit != "bytes" {
				out = append(out, p.Title+": memory not in bytes")
			}
		}
	}
	return out
}

func TestDashboardLatencyAndUnits(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../charts/skills-sidecar/files/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dashboardProblems(b) {
		t.Error(p)
	}
	// The check must be able to fail: the panels as they were.
	broken := `{"panels":[{"title":"p99","fieldConfig":{"defaults":{"unit":"s"}},"targets":[{"expr":"histogram_quantile(0.99, sum by (le) (rate(skills_sidecar_request_duration_seconds_bucket{route=\"upstream\"}[5m])))"}]},
		{"title":"mem","fieldConfig":{"defaults":{"unit":"short"}},"targets":[{"expr":"process_resident_memory_bytes"}]}]}`
	if got := dashboardProblems([]byte(broken)); len(got) != 2 {
		t.Errorf("dashboardProblems(old panels) = %q, want both flagged", got)
	}
}

// missingRunbooks returns the alerts in rules that have no "#### NAME"
// heading in readme: every runbook_url the chart renders points at one.
func missingRunbooks(rules, readme string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\S+)$`).FindAllStringSubmatch(rules, -1) {
		if !strings.Contains(readme, "\n#### "+m[1]+"\n") {
			out = append(out, m[1])
		}
	}
	return out
}

func TestEveryAlertHasARunbook(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../../charts/skills-sidecar/templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(rules), "runbook_url:"); n != strings.Count(string(rules), "- alert:") {
		t.Errorf("%d runbook_url lines for %d alerts", n, strings.Count(string(rules), "- alert:"))
	}
	if bad := missingRunbooks(string(rules), string(readme)); len(bad) > 0 {
		t.Errorf("alerts without a heading in docs/operations.md (their runbook_url leads nowhere): %v", bad)
	}
	if bad := missingRunbooks("        - alert: SkillsSidecarNoSuchAlert\n", string(readme)); len(bad) != 1 {
		t.Errorf("missingRunbooks missed an alert with no heading: %v", bad)
	}
}
