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
