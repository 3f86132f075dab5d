package catalog

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFingerprintAgreesWithLoad: the poll's scan-only fingerprint must equal
// the one a full load takes of an unchanged tree (or every poll reloads),
// and must change when a file does.
func TestFingerprintAgreesWithLoad(t *testing.T) {
	t.Parallel()
	for _, root := range []string{
		filepath.Join("testdata", "plugins", "broken"),
		filepath.Join("..", "..", "examples", "plugin"),
		filepath.Join(t.TempDir(), "missing"),
	} {
		_, full, _ := loadRoot(root, Options{}, false, nil)
		if scan := fingerprint(root, Options{}); scan != full {
			t.Errorf("%s: scan-only fingerprint %x != full load's %x", root, scan[:4], full[:4])
		}
	}

	dir := t.TempDir()
	md := filepath.Join(dir, "skills", "a", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(md, []byte("---\nname: a\ndescription: A.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := fingerprint(dir, Options{})
	if err := os.WriteFile(md, []byte("---\nname: a\ndescription: B.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(md, later, later); err != nil {
		t.Fatal(err)
	}
	if fingerprint(dir, Options{}) == before {
		t.Error("fingerprint unchanged after a file was rewritten")
	}
}
