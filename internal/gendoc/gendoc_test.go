package gendoc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte("intro\n<!-- s -->\nold\n<!-- e -->\nrest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale, err := Check(path, "<!-- s -->\n", "<!-- e -->", "new\n", false)
	if err != nil || stale != "old\n" {
		t.Fatalf("Check on a stale section = %q, %v; want the stale text", stale, err)
	}
	if stale, err := Check(path, "<!-- s -->\n", "<!-- e -->", "new\n", true); err != nil || stale != "" {
		t.Fatalf("Check with update = %q, %v", stale, err)
	}
	b, _ := os.ReadFile(path)
	if got, want := string(b), "intro\n<!-- s -->\nnew\n<!-- e -->\nrest\n"; got != want {
		t.Errorf("after update the file is %q, want %q", got, want)
	}
	if stale, err := Check(path, "<!-- s -->\n", "<!-- e -->", "new\n", false); err != nil || stale != "" {
		t.Errorf("Check on a fresh section = %q, %v; want no difference", stale, err)
	}
	if _, err := Check(path, "<!-- nope -->", "<!-- e -->", "x", false); !errors.Is(err, ErrNoMarkers) {
		t.Errorf("Check without markers = %v, want ErrNoMarkers", err)
	}
}
