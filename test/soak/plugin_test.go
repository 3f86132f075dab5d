package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// TestPluginSwap: the folder the soak writes is what the sidecar's catalog
// reads, every revision has the same skills with its own tag, and a swap
// leaves no old revision behind.
func TestPluginSwap(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "plugin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlugin(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	w, err := catalog.NewWatcher(dir, catalog.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRev(t, w.Snapshot(), 0)
	for rev := 1; rev <= 2; rev++ {
		if err := p.Swap(); err != nil {
			t.Fatal(err)
		}
		if ev := w.Reload(); !ev.OK || ev.Skills != 3 || len(ev.Problems) != 0 {
			t.Fatalf("Reload after swap %d = %+v, want OK with 3 skills and no problems", rev, ev)
		}
		checkRev(t, w.Snapshot(), rev)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stamps []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..2026") {
			stamps = append(stamps, e.Name())
		}
	}
	if len(stamps) != 1 {
		t.Errorf("timestamped folders after two swaps = %v, want only the current one", stamps)
	}
	if target, err := os.Readlink(filepath.Join(dir, "..data")); err != nil || len(stamps) != 1 || target != stamps[0] {
		t.Errorf("..data -> %q (%v), want the current folder %v", target, err, stamps)
	}
}

func checkRev(t *testing.T, s *catalog.Snapshot, rev int) {
	t.Helper()
	skills := s.Skills()
	if len(skills) != 3 {
		t.Fatalf("revision %d: %d skills, want 3", rev, len(skills))
	}
	for i, sk := range skills {
		if sk.Name != SkillName(i) || !strings.Contains(sk.Description, RevTag(rev)) || len(sk.Files) != 2 {
			t.Errorf("revision %d: skill %d = %s %q with %d files, want %s tagged %s with 2 files",
				rev, i, sk.Name, sk.Description, len(sk.Files), SkillName(i), RevTag(rev))
		}
		if _, ok := s.File(sk.Root + "/reference/notes.md"); !ok {
			t.Errorf("revision %d: no %s/reference/notes.md", rev, sk.Root)
		}
	}
}
