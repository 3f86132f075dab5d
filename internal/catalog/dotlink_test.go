package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// dotLinks are symlinks (link path → target, from the plugin root) that
// would serve a dot-file under another name; none may be served.
var dotLinks = map[string]string{
	"skills/hello/env.md":       "../../.env",                  // a dot-file at the root
	"skills/hello/hook.md":      "../../.git/hooks/pre-commit", // a file inside a dot-folder
	"skills/hello/git":          "../../.git",                  // a dot-folder, as a folder
	"skills/hello/key.md":       "../../keys/.id_ed25519",      // a dot-file inside a plain folder
	"skills/hello/dotdot.md":    "../../..secret/token",        // "..": not the kubelet's own shapes
	"skills/hello/datatmp.md":   "../../..data_tmp/token",      // the kubelet's transient link is not data
	"agents/leak.md":            "../.env",
	"skills/hello/fine.md":      "../other/shared.md", // control: served
	"skills/hello/fine-cfg.txt": "../../config/plain.txt",
}

// writeDotPlugin writes a plugin with the private files dotLinks point at,
// and the links, under dir (the skill files under data, which is "" for a
// plain folder or the ConfigMap's timestamped folder).
func writeDotPlugin(t *testing.T, dir, data string) {
	t.Helper()
	writeFiles(t, filepath.Join(dir, data), map[string]string{
		"skills/hello/SKILL.md":   "---\nname: hello\ndescription: Hello.\n---\n",
		"skills/other/SKILL.md":   "---\nname: other\ndescription: Other.\n---\n",
		"skills/other/shared.md":  "shared\n",
		".env":                    "API_KEY=secret\n",
		".git/hooks/pre-commit":   "secret hook\n",
		".git/config":             "secret config\n",
		"keys/.id_ed25519":        "secret key\n",
		"..secret/token":          "secret token\n",
		"..data_tmp/token":        "secret token\n",
		"config/plain.txt":        "plain\n",
		"agents/.keep":            "",
		".claude-plugin/dummy.md": "",
	})
	for link, target := range dotLinks {
		if err := os.Symlink(target, filepath.Join(dir, data, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
}

// checkDotLinks: every link into a dot entry is left out with a symlink
// problem naming it; the control links are served.
func checkDotLinks(t *testing.T, s *catalog.Snapshot) {
	t.Helper()
	problems := map[string]catalog.Problem{}
	for _, p := range s.Problems() {
		problems[p.Path] = p
	}
	for link := range dotLinks {
		uri := catalog.URIFromPath(strings.TrimPrefix(link, "skills/"))
		fine := strings.Contains(link, "fine")
		_, served := s.File(uri)
		_, servedDir := s.Dir(uri)
		if strings.HasPrefix(link, "agents/") {
			_, served = s.Agent("leak")
		}
		if served || servedDir {
			if !fine {
				t.Errorf("%s (-> %s) is served; a dot-file must never be", link, dotLinks[link])
			}
			continue
		}
		if fine {
			t.Errorf("%s (-> %s) is not served; want it served (problems %v)", link, dotLinks[link], s.Problems())
			continue
		}
		if p, ok := problems[link]; !ok || p.Kind != catalog.KindSymlink || p.Severity != catalog.SeveritySkip || !strings.Contains(p.Reason, "dot-file") {
			t.Errorf("problem for %s = %+v (found %v), want a symlink skip naming the dot-file", link, p, ok)
		}
	}
	for _, f := range []string{"skill://hello/SKILL.md", "skill://other/shared.md"} {
		if _, ok := s.File(f); !ok {
			t.Errorf("%s is not served", f)
		}
	}
}

// TestSymlinkToDotEntryIsPrivate: a symlink whose target is a dot-file or
// lies inside a dot-folder is never served, in a plain
// folder and inside a ConfigMap-style volume, where every file resolves
// through the kubelet's "..data" and timestamped dot-folders and must keep
// working, before and after an atomic swap.
func TestSymlinkToDotEntryIsPrivate(t *testing.T) {
	t.Parallel()
	t.Run("plain folder", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeDotPlugin(t, dir, "")
		s, err := catalog.Load(dir, catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkDotLinks(t, s)
	})
	t.Run("ConfigMap", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		const first, second = "..2026_12_01_09_00_00.1234567", "..2026_12_01_09_05_00.7654321"
		makeConfigMap(t, dir, first, nil)
		writeDotPlugin(t, dir, first)
		w, log := startWatcher(t, dir, catalog.Options{PollInterval: -1, Debounce: 10 * time.Millisecond})
		checkDotLinks(t, w.Snapshot())

		// The kubelet's swap: a new timestamped folder, "..data" renamed
		// onto it. The new revision adds a skill; dot links stay private.
		swapConfigMap(t, dir, second, map[string]string{"skills/added/SKILL.md": "---\nname: added\ndescription: Added.\n---\n"})
		writeDotPlugin(t, dir, second)
		waitFor(t, "the swap", func() bool {
			_, ok := w.Snapshot().Skill("skill://added/SKILL.md")
			return ok && len(log.all()) > 1
		})
		w.Reload() // the swap's writes and links may straddle the watcher's reload
		checkDotLinks(t, w.Snapshot())
	})
}
