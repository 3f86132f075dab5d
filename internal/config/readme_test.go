package config

import (
	"flag"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/gendoc"
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
	stale, err := gendoc.Check(path, tableStart, tableEnd, Table(), *update)
	if err != nil {
		t.Fatal(err)
	}
	if stale != "" {
		t.Errorf("%s's configuration table is stale; run go test ./internal/config -update\n got:\n%s\nwant:\n%s", path, stale, Table())
	}
}
