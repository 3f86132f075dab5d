package catalog

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNestedSkillStandsInWithItsOuter: a reload that finds a file of a
// skill still being written publishes that skill's previous version, whose
// manifest lists its nested skills' files as they were. A nested skill
// rebuilt from the new bytes then published other digests for the same
// URIs, and the snapshot served one of the two: the outer skill's entry
// no longer matched what a read of its file returned. Every manifest of a
// snapshot must state the digest and size of the file the snapshot serves
// under that URI.
func TestNestedSkillStandsInWithItsOuter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	skill := func(name string) string { return "---\nname: " + name + "\ndescription: d\n---\n" }
	// Modification times are set, and the reload's start given, so which
	// file is "still being written" is the test's choice, not the clock's.
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	settled, writing := start.Add(-time.Hour), start
	write("skills/outer/SKILL.md", skill("outer"), settled)
	write("skills/outer/notes.md", "notes 1\n", settled)
	write("skills/outer/inner/SKILL.md", skill("inner"), settled)
	write("skills/outer/inner/data.md", "data 1\n", settled)
	prev, err := Load(dir, Options{})
	if err != nil || len(prev.Skills()) != 2 {
		t.Fatalf("first load: %v, %d skills; want 2", err, len(prev.Skills()))
	}

	write("skills/outer/inner/data.md", "data 2\n", settled) // changed, and done
	write("skills/outer/notes.md", "notes 2, still being writ", writing)
	next, _, err := loadRoot(dir, Options{}, false, &settling{start: start, quiet: time.Second, prev: prev})
	if err != nil {
		t.Fatal(err)
	}
	for _, sk := range next.Skills() {
		for _, f := range sk.Files {
			served, ok := next.File(f.URI)
			if !ok || served.Digest != f.Digest || served.Size != f.Size {
				t.Errorf("%s lists %s as %s (%d bytes); the snapshot serves %q", sk.URI, f.URI, f.Digest, f.Size, served.Data)
			}
		}
	}
}
