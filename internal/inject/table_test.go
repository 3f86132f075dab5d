package inject

import (
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/gendoc"
)

const (
	tableStart = "<!-- annotation-table:start (generated from internal/inject and internal/config; go test ./internal/inject -update) -->\n"
	tableEnd   = "<!-- annotation-table:end -->"
)

// TestDocsTable keeps the annotation table of docs/kubernetes.md equal to
// AnnotationTable, so the documentation cannot drift from
// the constants.
func TestDocsTable(t *testing.T) {
	for _, path := range []string{"../../docs/kubernetes.md"} {
		stale, err := gendoc.Check(path, tableStart, tableEnd, AnnotationTable(), *update)
		if err != nil {
			t.Fatal(err)
		}
		if stale != "" {
			t.Errorf("%s's annotation table is stale; run go test ./internal/inject -update\n got:\n%s\nwant:\n%s", path, stale, AnnotationTable())
		}
	}
}

// TestAnnotationTableRows pins that every constant and every runtime key
// has its row, so the check above cannot pass on an empty table.
func TestAnnotationTableRows(t *testing.T) {
	t.Parallel()
	table := AnnotationTable()
	for _, name := range injectorConstants(t) {
		if !strings.Contains(table, "| `skills-sidecar.io/"+name+"` | injector |") {
			t.Errorf("table lacks the injector row of %s", name)
		}
	}
	for key := range runtimeKeyNames() {
		if !strings.Contains(table, "| `skills-sidecar.io/"+key+"` | sidecar") {
			t.Errorf("table lacks the runtime row of %s", key)
		}
	}
}
