package metrics_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/gendoc"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

var update = flag.Bool("update", false, "rewrite the metrics table (docs/operations.md) from the registry")

const (
	tableStart = "<!-- metrics-table:start (generated from internal/metrics; go test ./internal/metrics -update) -->\n"
	tableEnd   = "<!-- metrics-table:end -->"
)

// table renders every skills_sidecar_* family of a registry whose metrics
// have all been touched, as a Markdown table.
func table(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test")
	m.Request("tools/call", "upstream", 200, time.Millisecond)
	m.UpstreamResponse("tools/call", time.Millisecond)
	m.DeclarationInjected("legacy")
	m.StreamOpened()
	m.CatalogReload(true, time.Now(), 1, 1, []metrics.Problem{{Kind: "name", Severity: "skip"}})
	m.DigestRefresh()
	m.DigestMismatch()
	m.HashedBytes(1)
	m.AuthVerdict("allowed", true)
	m.Notification("notifications/resources/list_changed", false)
	m.CallerRefusal("bridge_sessions", false)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n")
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), metrics.Namespace+"_") {
			continue
		}
		var labels []string
		if ms := mf.GetMetric(); len(ms) > 0 {
			for _, l := range ms[0].GetLabel() {
				labels = append(labels, "`"+l.GetName()+"`")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", mf.GetName(), strings.ToLower(mf.GetType().String()), strings.Join(labels, ", "), mf.GetHelp())
	}
	return b.String()
}

// TestMetricsTable keeps the metrics table (docs/operations.md) equal to what the
// registry really exposes.
func TestMetricsTable(t *testing.T) {
	const path = "../../docs/operations.md"
	stale, err := gendoc.Check(path, tableStart, tableEnd, table(t), *update)
	if err != nil {
		t.Fatal(err)
	}
	if stale != "" {
		t.Errorf("%s's metrics table is stale; run go test ./internal/metrics -update\n got:\n%s\nwant:\n%s", path, stale, table(t))
	}
}
