package stdio_test

import (
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestDocumentedTablesAreTheAssemblys: the bounded tables (and bounds of
// one session's own) docs/security.md lists, by data.table, are exactly
// those whose refusals the assembly counts in caller_refusals_total, in
// front of an upstream URL and of a stdio command together: a table the
// code adds must be documented, and a documented one must exist.
func TestDocumentedTablesAreTheAssemblys(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(demo.Handler(nil))
	t.Cleanup(up.Close)
	overURL := sidecartest.Start(t, up.URL, sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) { c.AuthGate = "none" }})
	overStdio := startStdioSidecar(t, "gosdk")
	var code []string
	for _, s := range []*sidecartest.Sidecar{overURL, overStdio} {
		mf := metricstest.Gather(t, s.Registry)["skills_sidecar_caller_refusals_total"]
		if mf == nil {
			t.Fatal("no skills_sidecar_caller_refusals_total family")
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" && !slices.Contains(code, l.GetValue()) {
					code = append(code, l.GetValue())
				}
			}
		}
	}
	slices.Sort(code)
	docs := documentedTables(t, "../../docs/security.md")
	if diff := cmp.Diff(docs, code); diff != "" {
		t.Errorf("tables in docs/security.md (-) and counted by the assembly (+):\n%s", diff)
	}
}

// documentedTables returns the data.table names that open a row of a
// table (`name`: ...) in path's section "Callers and their shares",
// sorted, each once.
func documentedTables(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Callers and their shares\n")
	if start < 0 {
		t.Fatalf("%s has no section Callers and their shares", path)
	}
	section := doc[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\s*\\| `([a-z_]+)`").FindAllStringSubmatch(section, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		t.Fatalf("%s lists no table", path)
	}
	return out
}
