package catalog

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
)

// TestNestedVolumeSwapDuringLoadIsWhole: a ConfigMap volume may be mounted
// at any folder of the plugin (the kubelet's data folders pass the
// dot-file rule at any depth), here skills/acme. The kubelet updates it
// by renaming "..data" onto a new folder and deleting the old one at once;
// a load that found the files through the old folder and read them after
// the swap must load again, as it does for a volume at the root, rather
// than publish a plugin missing what it could no longer read. Not
// parallel: afterScan is the package's.
func TestNestedVolumeSwapDuringLoadIsWhole(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(dir, "skills", "acme")
	keys := func(rev string) map[string][]byte {
		return map[string][]byte{
			"SKILL.md": []byte("---\nname: acme\ndescription: revision " + rev + "\n---\n"),
			"notes.md": []byte("notes of revision " + rev + "\n"),
		}
	}
	if err := kubeletvolume.Write(vol, keys("1")); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	swap := func() {
		once.Do(func() {
			if err := kubeletvolume.Write(vol, keys("2")); err != nil {
				t.Error(err)
			}
		})
	}
	afterScan.Store(&swap)
	defer afterScan.Store(nil)

	s, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems()) > 0 {
		t.Errorf("a load that overlapped the swap published problems: %v", s.Problems())
	}
	sk, ok := s.Skill("skill://acme/SKILL.md")
	if !ok {
		t.Fatal("skill acme is not published")
	}
	if len(sk.Files) != 2 {
		t.Fatalf("skill acme has %d files; want both", len(sk.Files))
	}
	md, _ := s.File("skill://acme/SKILL.md")
	notes, _ := s.File("skill://acme/notes.md")
	if want := "notes of revision 2\n"; string(md.Data) != string(keys("2")["SKILL.md"]) || string(notes.Data) != want {
		t.Errorf("published SKILL.md %q and notes.md %q; want revision 2 of both", md.Data, notes.Data)
	}
}
