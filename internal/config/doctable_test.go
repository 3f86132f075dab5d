package config

import (
	"flag"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/gendoc"
)

var update = flag.Bool("update", false, "rewrite the configuration table (docs/configuration.md) from Config")

const (
	tableStart = "<!-- config-table:start (generated from internal/config; go test ./internal/config -update) -->\n"
	tableEnd   = "<!-- config-table:end -->"
)

// TestConfigTable keeps the configuration table (docs/configuration.md) equal to the one
// generated from Config's tags, so documentation cannot drift from code.
func TestConfigTable(t *testing.T) {
	const path = "../../docs/configuration.md"
	stale, err := gendoc.Check(path, tableStart, tableEnd, Table(), *update)
	if err != nil {
		t.Fatal(err)
	}
	if stale != "" {
		t.Errorf("%s's configuration table is stale; run go test ./internal/config -update\n got:\n%s\nwant:\n%s", path, stale, Table())
	}
}
