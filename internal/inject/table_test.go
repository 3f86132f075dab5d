package inject

import (
	"os"
	"strings"
	"testing"
)

const (
	tableStart = "<!-- annotation-table:start (generated from internal/inject and internal/config; go test ./internal/inject -update) -->\n"
	tableEnd   = "<!-- annotation-table:end -->"
)

// TestDocsTable keeps docs/kubernetes.md's annotation table equal to
// AnnotationTable, so the documentation cannot drift from the constants.
func TestDocsTable(t *testing.T) {
	const path = "../../docs/kubernetes.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q ... %q", path, tableStart, tableEnd)
	}
	got, want := doc[i+len(tableStart):j], AnnotationTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(tableStart)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's annotation table is stale; run go test ./internal/inject -update\n got:\n%s\nwant:\n%s", path, got, want)
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
