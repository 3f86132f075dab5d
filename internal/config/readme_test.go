package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's configuration table from Config")

const (
	tableStart = "<!-- config-table:start (generated from internal/config; go test ./internal/config -update) -->\n"
	tableEnd   = "<!-- config-table:end -->"
)

// TestREADMETable keeps the README's configuration table equal to the one
// generated from Config's tags, so documentation cannot drift from code.
func TestREADMETable(t *testing.T) {
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, tableStart), strings.Index(readme, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the markers %q ... %q", tableStart, tableEnd)
	}
	got := readme[i+len(tableStart) : j]
	want := Table()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(readme[:i+len(tableStart)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's configuration table is stale; run go test ./internal/config -update\n got:\n%s\nwant:\n%s", got, want)
}
