package catalog_test

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// devicePlugin is the plugin folder of the device tests: one skill and one
// agent that load, next to which the tests put devices.
var devicePlugin = map[string]string{
	"skills/s/SKILL.md": "---\nname: s\ndescription: Next to a device.\n---\n",
	"skills/s/ok.txt":   "ok\n",
	"agents/good.md":    "---\nname: good\ndescription: Loads.\n---\n",
}

// checkDevicePluginLoads checks that what devicePlugin holds is served
// whatever devices sit next to it.
func checkDevicePluginLoads(t *testing.T, s *catalog.Snapshot) {
	t.Helper()
	sk, ok := s.Skill("skill://s/SKILL.md")
	if !ok {
		t.Fatalf("skill s not served; skills %v, problems %v", skillURIs(s), s.Problems())
	}
	if diff := cmp.Diff([]string{"skill://s/SKILL.md", "skill://s/ok.txt"}, fileURIs(sk.Files)); diff != "" {
		t.Errorf("manifest of s (-want +got):\n%s", diff)
	}
	if _, ok := s.Agent("good"); !ok || len(s.Agents()) != 1 {
		t.Errorf("Agents() = %v, want only good", s.Agents())
	}
}

// TestDeviceOnDisk: a character device in a skill folder and as an agent
// file is refused as a device, also through a link inside the root; a link
// to /dev/null is refused before anything is opened, as an absolute link.
// Creating a device needs mknod (root, and a runtime that allows it); where
// it is refused only the link is checked here, and TestDeviceThroughFS
// checks the device reason against the real /dev/null everywhere.
func TestDeviceOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, devicePlugin)
	// /dev/null is a device on every Linux; the loader follows no absolute
	// link, so it is never opened.
	if err := os.Symlink("/dev/null", filepath.Join(dir, "skills/s/dev-null.txt")); err != nil {
		t.Fatal(err)
	}
	want := []catalog.Problem{
		skip("skills/s/dev-null.txt", "symlink", `symbolic link target "/dev/null" is absolute; only links inside the plugin root are followed`),
	}
	if mknodDevNull(t, filepath.Join(dir, "skills/s/null"), filepath.Join(dir, "agents/null.md")) {
		// A link inside the root to a device is followed, and the target refused.
		if err := os.Symlink("null", filepath.Join(dir, "skills/s/null-link")); err != nil {
			t.Fatal(err)
		}
		want = append(want,
			skip("agents/null.md", "special", "a device, not a regular file"),
			skip("skills/s/null", "special", "a device, not a regular file"),
			skip("skills/s/null-link", "special", "a device, not a regular file"),
		)
		slices.SortFunc(want, func(a, b catalog.Problem) int { return strings.Compare(a.Path, b.Path) })
	}

	s, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, s.Problems()); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
	checkDevicePluginLoads(t, s)
}

// mknodDevNull makes each of names a character device with /dev/null's
// number. It reports false when the system does not allow mknod.
func mknodDevNull(t *testing.T, names ...string) bool {
	t.Helper()
	for _, name := range names {
		err := syscall.Mknod(name, syscall.S_IFCHR|0o666, devNullNumber)
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Logf("mknod refused (%v): no device on disk in this run; TestDeviceThroughFS checks the device reason", err)
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return true
}

// devNullNumber is the device number of /dev/null on Linux: major 1, minor 3.
const devNullNumber = 1<<8 | 3

// TestDeviceThroughFS runs the loader's walk over a plugin folder on disk in
// which the real /dev/null shows at a path inside a skill and at an agent
// file. It needs no mknod, so the device reason is checked wherever the
// tests run.
func TestDeviceThroughFS(t *testing.T) {
	t.Parallel()
	null, err := os.Stat("/dev/null")
	if err != nil || null.Mode()&fs.ModeDevice == 0 {
		t.Fatalf("/dev/null = %v, %v; want a device", null, err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, devicePlugin)
	fsys := devNullFS{FS: os.DirFS(dir), devs: []string{"skills/s/null", "agents/null.md"}}

	s, err := catalog.LoadFS(fsys, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.Problem{
		skip("agents/null.md", "special", "a device, not a regular file"),
		skip("skills/s/null", "special", "a device, not a regular file"),
	}
	if diff := cmp.Diff(want, s.Problems()); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
	checkDevicePluginLoads(t, s)
}

// devNullFS is a folder on disk in which the character device /dev/null
// also shows at each of devs: listed by ReadDir, described by Stat and
// opened by Open as the real device.
type devNullFS struct {
	fs.FS
	devs []string
}

func (f devNullFS) Open(name string) (fs.File, error) {
	if slices.Contains(f.devs, name) {
		return os.Open("/dev/null")
	}
	return f.FS.Open(name)
}

func (f devNullFS) Stat(name string) (fs.FileInfo, error) {
	if slices.Contains(f.devs, name) {
		return devNullInfo(path.Base(name))
	}
	return fs.Stat(f.FS, name)
}

func (f devNullFS) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(f.FS, name)
	if err != nil {
		return nil, err
	}
	for _, d := range f.devs {
		if path.Dir(d) != name {
			continue
		}
		info, err := devNullInfo(path.Base(d))
		if err != nil {
			return nil, err
		}
		ents = append(ents, fs.FileInfoToDirEntry(info))
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// devNullInfo is /dev/null's own FileInfo under another name.
func devNullInfo(name string) (fs.FileInfo, error) {
	info, err := os.Stat("/dev/null")
	if err != nil {
		return nil, err
	}
	return renamedInfo{info, name}, nil
}

type renamedInfo struct {
	fs.FileInfo
	name string
}

func (i renamedInfo) Name() string { return i.name }

// TestUnreadableFiles: a skill file, a SKILL.md and an agent file that were
// listed but are gone when the loader opens them (as when a ConfigMap
// update deletes the old folder mid-load) are each skipped as unreadable,
// with the system's error, and everything else loads. Permissions cannot
// stage this: chmod 000 does not stop root.
func TestUnreadableFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"skills/s/SKILL.md":   "---\nname: s\ndescription: Loses one file.\n---\n",
		"skills/s/kept.txt":   "kept\n",
		"skills/s/gone.txt":   "gone\n",
		"skills/t/SKILL.md":   "---\nname: t\ndescription: Loses its SKILL.md.\n---\n",
		"skills/t/other.txt":  "other\n",
		"agents/good.md":      "---\nname: good\ndescription: Loads.\nskills: [s]\n---\n",
		"agents/vanishing.md": "---\nname: vanishing\ndescription: Gone when read.\n---\n",
	})
	fsys := vanishingFS{FS: os.DirFS(dir), dir: dir, gone: []string{"skills/s/gone.txt", "skills/t/SKILL.md", "agents/vanishing.md"}}

	s, err := catalog.LoadFS(fsys, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.Problem{
		skip("agents/vanishing.md", "read", "cannot be read: no such file or directory"),
		skip("skills/s/gone.txt", "read", "cannot be read: no such file or directory"),
		skip("skills/t/SKILL.md", "read", "cannot be read: no such file or directory"),
	}
	if diff := cmp.Diff(want, s.Problems()); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"skill://s/SKILL.md"}, skillURIs(s)); diff != "" {
		t.Errorf("Skills() (-want +got):\n%s", diff)
	}
	if sk, ok := s.Skill("skill://s/SKILL.md"); ok {
		if diff := cmp.Diff([]string{"skill://s/SKILL.md", "skill://s/kept.txt"}, fileURIs(sk.Files)); diff != "" {
			t.Errorf("manifest of s (-want +got):\n%s", diff)
		}
	}
	if a, ok := s.Agent("good"); !ok || len(s.Agents()) != 1 || len(a.Skills) != 1 {
		t.Errorf("Agents() = %v, want only good, naming skill s", s.Agents())
	}
}

// vanishingFS is a folder on disk whose files named in gone are deleted
// just before they are opened: listed, then gone.
type vanishingFS struct {
	fs.FS
	dir  string
	gone []string
}

func (f vanishingFS) Open(name string) (fs.File, error) {
	if slices.Contains(f.gone, name) {
		if err := os.Remove(filepath.Join(f.dir, filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return f.FS.Open(name)
}

// TestAgentSubfoldersIgnored: agents are agents/*.md at the top level only.
// Files in subfolders, a folder named *.md and a link to a folder are not
// agents and not problems, even when they would be invalid or duplicates.
func TestAgentSubfoldersIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"skills/hello/SKILL.md":        "---\nname: hello\ndescription: Hello.\n---\n",
		"agents/top.md":                "---\nname: top\ndescription: Top level.\nskills: [hello]\n---\n",
		"agents/team/nested.md":        "---\nname: nested\ndescription: In a subfolder.\n---\n",
		"agents/team/top.md":           "---\nname: top\ndescription: Would be a duplicate.\n---\n",
		"agents/team/broken.md":        "no frontmatter\n",
		"agents/team/deeper/deep.md":   "---\nname: deep\ndescription: Two levels down.\n---\n",
		"agents/folder.md/inner.md":    "---\nname: inner\ndescription: In a folder named like an agent file.\n---\n",
		"agents/.hidden/dotted.md":     "---\nname: dotted\ndescription: In a dot-folder.\n---\n",
		"agents/team/.also-hidden.md":  "---\nname: hidden\ndescription: A dot-file in a subfolder.\n---\n",
		"agents/team/notes/readme.txt": "not an agent\n",
	})
	if err := os.Symlink("team", filepath.Join(dir, "agents/linked-team.md")); err != nil {
		t.Fatal(err)
	}
	s, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]catalog.Problem{}, s.Problems(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
	var names []string
	for _, a := range s.Agents() {
		names = append(names, a.Name+"="+a.File)
	}
	if diff := cmp.Diff([]string{"top=agents/top.md"}, names); diff != "" {
		t.Errorf("Agents() (-want +got):\n%s", diff)
	}
	if a, ok := s.Agent("top"); !ok || len(a.Skills) != 1 {
		t.Errorf("Agent(top) = %+v, %v; want it naming skill hello", a, ok)
	}
}
