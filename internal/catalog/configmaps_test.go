package catalog_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
)

// kubeletMount adds a ConfigMap folder in the kubelet's layout to a MapFS:
// keys in a timestamped folder, "..data" linking to it, one link per key.
func kubeletMount(fsys fstest.MapFS, mount string, keys map[string]string) {
	const ts = "..2026_01_02_03_04_05.000000001"
	fsys[mount+"/..data"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte(ts)}
	for k, v := range keys {
		fsys[mount+"/"+ts+"/"+k] = &fstest.MapFile{Data: []byte(v)}
		fsys[mount+"/"+k] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("..data/" + k)}
	}
}

func TestConfigMapsLayout(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{}
	kubeletMount(fsys, "acme", map[string]string{
		"_2Eclaude-plugin__plugin.json": `{"name":"acme","version":"2"}`,
		"skills__refunds__SKILL.md":     skillFile("refunds"),
		"skills__refunds__run_5Fme.py":  "print(1)\n",
		"not_encoded":                   "x",
	})
	kubeletMount(fsys, "acme-1", map[string]string{
		"skills__billing__invoices__SKILL.md": skillFile("invoices"),
		"agents__triage.md":                   "---\nname: triage\ndescription: Triage.\n---\nGo.\n",
	})
	s, err := catalog.LoadFS(fsys, catalog.Options{Layout: catalog.LayoutConfigMaps})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sk := range s.Skills() {
		for _, f := range sk.Files {
			got = append(got, f.URI)
		}
	}
	want := []string{"skill://billing/invoices/SKILL.md", "skill://refunds/SKILL.md", "skill://refunds/run_me.py"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files served (-want +got):\n%s", diff)
	}
	if len(s.Agents()) != 1 || s.Plugin().Version != "2" {
		t.Errorf("agents %d, plugin %+v; want one agent and plugin version 2", len(s.Agents()), s.Plugin())
	}
	wantProbs := []catalog.Problem{{Path: "acme/not_encoded", Kind: catalog.KindPath, Severity: catalog.SeveritySkip,
		Reason: `not a key written by skills-sidecar inject configmap: catalog: not an encoded plugin path: "not_encoded" has a lone _ at 3`}}
	if diff := cmp.Diff(wantProbs, s.Problems()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestConfigMapsLayoutFileInTwo: a file in two ConfigMaps with the same
// bytes (caught mid-move: the kubelet has updated one volume and not yet
// the other) is served once, and the load and a restart succeed.
func TestConfigMapsLayoutFileInTwo(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{}
	kubeletMount(fsys, "acme", map[string]string{"skills__x__SKILL.md": skillFile("x"), "skills__x__notes.txt": "n\n"})
	kubeletMount(fsys, "acme-1", map[string]string{"skills__x__notes.txt": "n\n", "skills__y__SKILL.md": skillFile("y")})
	s, err := catalog.LoadFS(fsys, catalog.Options{Layout: catalog.LayoutConfigMaps})
	if err != nil {
		t.Fatalf("LoadFS = %v, want the file in both ConfigMaps served once", err)
	}
	sk, ok := s.Skill("skill://x/SKILL.md")
	if !ok || len(sk.Files) != 2 {
		t.Fatalf("skill x = %+v, %v; want SKILL.md and notes.txt", sk, ok)
	}
	if _, ok := s.Skill("skill://y/SKILL.md"); !ok || len(s.Problems()) != 0 {
		t.Errorf("skill y served %v, problems %v; want y and no problem", ok, s.Problems())
	}
}

// TestConfigMapsLayoutRefuses feeds the layout every conflict and every
// broken mount it exists to catch.
func TestConfigMapsLayoutRefuses(t *testing.T) {
	t.Parallel()
	sk := skillFile("x")
	tests := map[string]struct {
		build func(fstest.MapFS)
		is    error
		want  []string
	}{
		"path in two ConfigMaps, other bytes": {func(f fstest.MapFS) {
			kubeletMount(f, "a", map[string]string{"skills__x__SKILL.md": sk})
			kubeletMount(f, "b", map[string]string{"skills__x__SKILL.md": sk + "More.\n"})
		}, catalog.ErrConflict, []string{`"skills/x/SKILL.md"`, "ConfigMap a key skills__x__SKILL.md", "ConfigMap b key skills__x__SKILL.md"}},
		"two keys one path": {func(f fstest.MapFS) {
			kubeletMount(f, "a", map[string]string{"skills__x__SKILL.md": sk, "skills__x__SKILL_2Emd": sk})
		}, catalog.ErrConflict, []string{"skills__x__SKILL.md", "skills__x__SKILL_2Emd"}},
		// One ConfigMap's two keys are never a move: refused, same bytes or not.
		"two keys one path, same bytes": {func(f fstest.MapFS) {
			kubeletMount(f, "a", map[string]string{"skills__x__SKILL.md": sk, "skills__x__SKILL_2Emd": sk})
		}, catalog.ErrConflict, []string{"ConfigMap a key skills__x__SKILL.md and ConfigMap a key skills__x__SKILL_2Emd"}},
		"file and folder": {func(f fstest.MapFS) {
			kubeletMount(f, "a", map[string]string{"skills__x": "x"})
			kubeletMount(f, "b", map[string]string{"skills__x__SKILL.md": sk})
		}, catalog.ErrConflict, []string{`"skills/x"`, "also a folder"}},
		"..data leads out": {func(f fstest.MapFS) {
			f["a/..data"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("../b")}
		}, catalog.ErrUnreadable, []string{`"../b"`}},
		"..data not a link": {func(f fstest.MapFS) {
			f["a/..data/skills__x__SKILL.md"] = &fstest.MapFile{Data: []byte(sk)}
		}, catalog.ErrUnreadable, []string{"not a symbolic link"}},
		"..data dangling": {func(f fstest.MapFS) {
			f["a/..data"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("..gone")}
		}, catalog.ErrUnreadable, []string{"ConfigMap folder a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			tc.build(fsys)
			_, err := catalog.LoadFS(fsys, catalog.Options{Layout: catalog.LayoutConfigMaps})
			if !errors.Is(err, tc.is) {
				t.Fatalf("LoadFS = %v, want %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestConfigMapsFSConforms runs testing/fstest's own checker over the
// decoded tree.
func TestConfigMapsFSConforms(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := kubeletvolume.Write(filepath.Join(root, "a"), map[string][]byte{"skills__x__SKILL.md": []byte("x"), "top.txt": []byte("t")}); err != nil {
		t.Fatal(err)
	}
	if err := kubeletvolume.Write(filepath.Join(root, "b"), map[string][]byte{"skills__x__more__deep.bin": {0, 1}}); err != nil {
		t.Fatal(err)
	}
	fsys, err := catalog.ConfigMapsFS(os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "skills/x/SKILL.md", "skills/x/more/deep.bin", "top.txt"); err != nil {
		t.Error(err)
	}
}

// TestWatcherConfigMapsSwaps runs a watcher over two ConfigMap folders and
// swaps them as the kubelet does, one at a time: a file added, a file
// removed, a file moved from one ConfigMap to the other (seen in both for a
// moment, which keeps the last good snapshot), and the pair of ConfigMaps
// swapped in the opposite order.
func TestWatcherConfigMapsSwaps(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]catalog.Options{
		"events": {Layout: catalog.LayoutConfigMaps, PollInterval: -1, Debounce: 10 * time.Millisecond},
		"poll":   {Layout: catalog.LayoutConfigMaps, NoEvents: true, PollInterval: 20 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			a, b := filepath.Join(root, "p"), filepath.Join(root, "p-1")
			write := func(dir string, keys map[string]string) {
				t.Helper()
				m := map[string][]byte{}
				for k, v := range keys {
					m[k] = []byte(v)
				}
				if err := kubeletvolume.Write(dir, m); err != nil {
					t.Fatal(err)
				}
			}
			write(a, map[string]string{"skills__one__SKILL.md": skillFile("one")})
			write(b, map[string]string{"skills__two__SKILL.md": skillFile("two")})
			w, log := startWatcher(t, root, opts)
			if !hasSkill(w, "skill://one/SKILL.md")() || !hasSkill(w, "skill://two/SKILL.md")() {
				t.Fatal("initial snapshot lacks a skill")
			}
			file := func(uri string) func() bool {
				return func() bool { _, ok := w.Snapshot().File(uri); return ok }
			}
			not := func(f func() bool) func() bool { return func() bool { return !f() } }

			write(a, map[string]string{"skills__one__SKILL.md": skillFile("one"), "skills__one__notes.txt": "n"})
			t.Logf("added file served after %v", waitFor(t, "the added file", file("skill://one/notes.txt")))

			write(b, map[string]string{})
			t.Logf("removed skill gone after %v", waitFor(t, "the removed skill", not(hasSkill(w, "skill://two/SKILL.md"))))

			// Move notes.txt from p to p-1, p-1 first: for a moment both hold
			// it, and the watcher keeps serving the last good snapshot.
			write(b, map[string]string{"skills__one__notes.txt": "moved"})
			waitFor(t, "a failed reload on the conflict", func() bool {
				evs := log.all()
				return !evs[len(evs)-1].OK && errors.Is(evs[len(evs)-1].Err, catalog.ErrConflict)
			})
			if !file("skill://one/notes.txt")() {
				t.Fatal("the file in both ConfigMaps vanished; want the last good snapshot kept")
			}
			write(a, map[string]string{"skills__one__SKILL.md": skillFile("one")})
			d := waitFor(t, "the moved file's new bytes", func() bool {
				f, ok := w.Snapshot().File("skill://one/notes.txt")
				return ok && string(f.Data) == "moved"
			})
			t.Logf("moved file served from its new ConfigMap after %v", d)

			// Move SKILL.md the other way, p first: for a moment it is in
			// neither, then served again.
			write(a, map[string]string{})
			moved := strings.Replace(skillFile("one"), "Skill one.", "Skill one, moved.", 1)
			write(b, map[string]string{"skills__one__notes.txt": "moved", "skills__one__SKILL.md": moved})
			t.Logf("skill moved to p-1 served after %v", waitFor(t, "the skill from p-1", func() bool {
				sk, ok := w.Snapshot().Skill("skill://one/SKILL.md")
				return ok && sk.Description == "Skill one, moved." && len(sk.Files) == 2
			}))
		})
	}
}

// TestCheckConfigMapKeysAgreesWithLoad: the key-only check and a load of
// the same ConfigMaps mounted the kubelet's way give the same verdict and
// the same conflict message (the load is the judge: it is what the sidecar
// does).
func TestCheckConfigMapKeysAgreesWithLoad(t *testing.T) {
	t.Parallel()
	sk := skillFile("x")
	tests := map[string]map[string][]string{
		"fine":                       {"a": {"skills__x__SKILL.md"}, "b": {"agents__y.md", "_2Eclaude-plugin__plugin.json"}},
		"path in two ConfigMaps":     {"a": {"skills__x__SKILL.md"}, "b": {"skills__x__SKILL.md"}},
		"two keys one path":          {"a": {"skills__x__SKILL.md", "skills__x__SKILL_2Emd"}},
		"file and folder":            {"a": {"skills__x"}, "b": {"skills__x__SKILL.md"}},
		"undecodable is no conflict": {"a": {"skills__x__SKILL.md", "not_encoded"}},
	}
	for name, keys := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for cm, ks := range keys {
				m := map[string]string{}
				for _, k := range ks {
					// Bytes of each ConfigMap's own: the load serves a
					// file in two ConfigMaps once when the bytes agree,
					// which a check of keys alone cannot see.
					m[k] = sk + "<!-- " + cm + " -->\n"
				}
				kubeletMount(fsys, cm, m)
			}
			_, loadErr := catalog.LoadFS(fsys, catalog.Options{Layout: catalog.LayoutConfigMaps})
			checkErr := catalog.CheckConfigMapKeys(keys)
			if (loadErr == nil) != (checkErr == nil) {
				t.Fatalf("CheckConfigMapKeys = %v, LoadFS = %v: want the same verdict", checkErr, loadErr)
			}
			if checkErr == nil {
				if name != "fine" && name != "undecodable is no conflict" {
					t.Fatalf("no conflict found in %v", keys)
				}
				return
			}
			if !errors.Is(checkErr, catalog.ErrConflict) || !strings.Contains(loadErr.Error(), checkErr.Error()) {
				t.Errorf("CheckConfigMapKeys = %v, want ErrConflict as in LoadFS's %v", checkErr, loadErr)
			}
		})
	}
}
