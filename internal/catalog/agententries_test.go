package catalog_test

import (
	"fmt"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// TestAgentsCountTowardMaxEntries: MaxEntries bounds the entries read from
// the whole folder (the `limits` reason: "the folder over 100,000
// entries"), agents/ included: past the bound no agent file is opened, and
// the load says so once, as a walk of skills/ does.
func TestAgentsCountTowardMaxEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 10 {
		name := fmt.Sprintf("a%02d", i)
		files["agents/"+name+".md"] = "---\nname: " + name + "\ndescription: Agent " + name + ".\n---\nbody\n"
	}
	writeFiles(t, dir, files)
	s, err := catalog.Load(dir, catalog.Options{MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Agents()); n > 4 {
		t.Errorf("%d agents loaded from a folder bounded to 4 entries", n)
	}
	limits := 0
	for _, p := range s.Problems() {
		if p.Kind == catalog.KindLimits {
			limits++
		}
	}
	if limits != 1 {
		t.Errorf("problems %v; want one %q problem for the entries past the bound", s.Problems(), catalog.KindLimits)
	}
}
