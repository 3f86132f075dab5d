package lint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/lint"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var (
	exampleDir = filepath.Join("..", "..", "examples", "plugin")
	brokenDir  = filepath.Join("..", "catalog", "testdata", "plugins", "broken")
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = lint.Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExampleIsClean(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, exampleDir)
	if code != lint.ExitOK {
		t.Fatalf("lint examples/plugin = %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	golden(t, "example.txt", out)

	var embedded bytes.Buffer
	if code := lint.RunFS(examples.Plugin(), "text", &embedded, os.Stderr); code != lint.ExitOK {
		t.Fatalf("lint of the embedded example = %d, want 0:\n%s", code, embedded.String())
	}
	if embedded.String() != out {
		t.Errorf("embedded and on-disk example lint differently:\n%s\nvs\n%s", embedded.String(), out)
	}
}

// TestBrokenFixtureNamesEveryItem: exit 1, and every problem the catalog
// finds appears with its file and reason.
func TestBrokenFixtureNamesEveryItem(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, brokenDir)
	if code != lint.ExitSkipped {
		t.Fatalf("lint broken = %d, want 1; stderr %s", code, errOut)
	}
	s, err := catalog.Load(brokenDir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems()) < 30 {
		t.Fatalf("broken fixture has %d problems, want every rule broken", len(s.Problems()))
	}
	for _, p := range s.Problems() {
		if !strings.Contains(out, p.Path+": ") || !strings.Contains(out, p.Reason) {
			t.Errorf("lint output does not name %s: %s", p.Path, p.Reason)
		}
	}
	golden(t, "broken.txt", out)
}

func TestJSONFormat(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, brokenDir, "--format", "json") // flags after the folder work too
	if code != lint.ExitSkipped {
		t.Fatalf("lint --format json broken = %d, want 1", code)
	}
	var r struct {
		OK       bool              `json:"ok"`
		Skills   []json.RawMessage `json:"skills"`
		Problems []catalog.Problem `json:"problems"`
		Skipped  int               `json:"skipped"`
		Warnings int               `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	s, _ := catalog.Load(brokenDir, catalog.Options{})
	if diff := cmp.Diff(s.Problems(), r.Problems); diff != "" {
		t.Errorf("problems (-catalog +json):\n%s", diff)
	}
	if r.OK || r.Skipped != s.Skipped() || r.Warnings != 2 || len(r.Skills) != 2 {
		t.Errorf("report = ok %v skipped %d warnings %d skills %d", r.OK, r.Skipped, r.Warnings, len(r.Skills))
	}

	code, out, _ = run(t, "--format=json", exampleDir)
	if code != lint.ExitOK || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"problems": []`) {
		t.Errorf("lint --format=json example = %d:\n%s", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"no folder":       {},
		"two folders":     {exampleDir, brokenDir},
		"bad format":      {"--format", "xml", exampleDir},
		"unknown flag":    {"--strict", exampleDir},
		"bad limit mode":  {"--limit-mode", "maybe", exampleDir},
		"bad portability": {"--frontmatter-portability", "serve", exampleDir},
		"missing folder":  {filepath.Join(t.TempDir(), "nope")},
		"folder is afile": {filepath.Join(exampleDir, ".claude-plugin", "plugin.json")},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, args...)
			if code != lint.ExitUsage || errOut == "" || out != "" {
				t.Errorf("lint %q = %d, stdout %q, stderr %q; want 2 with a message on stderr only", args, code, out, errOut)
			}
		})
	}
	if code, _, errOut := run(t, "-h"); code != lint.ExitOK || !strings.Contains(errOut, "usage: skills-sidecar lint") {
		t.Errorf("lint -h = %d, %q; want 0 and the usage", code, errOut)
	}
}

func TestLimitModeFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{"skills/many/SKILL.md": "---\nname: many\ndescription: Too many files.\n---\n"}
	for i := range 513 {
		files["skills/many/f"+strings.Repeat("0", 3-len(itoa(i)))+itoa(i)+".txt"] = "x"
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, _ := run(t, dir); code != lint.ExitSkipped || !strings.Contains(out, "skills/many: skipped (limits): skill has 514 files, over the limit of 512") {
		t.Errorf("lint (skip mode) = %d:\n%s", code, out)
	}
	if code, out, _ := run(t, "--limit-mode", "warn", dir); code != lint.ExitOK || !strings.Contains(out, "skills/many: warning (limits)") {
		t.Errorf("lint --limit-mode warn = %d:\n%s", code, out)
	}
}

// TestFrontmatterPortabilityFlag: lint reports a plain `on` key and a
// timestamp that PyYAML reads differently, with the line and the quoted
// fix; skipped by default, warned with --frontmatter-portability warn, and
// marked "ambiguous" in the JSON report.
func TestFrontmatterPortabilityFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	md := filepath.Join(dir, "skills", "ci", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "---\nname: ci\ndescription: Runs on push.\nmetadata:\n  on: push\n  since: 2025-06-02 10:30:00\n---\n"
	if err := os.WriteFile(md, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `skills/ci/SKILL.md: skipped (frontmatter): frontmatter that YAML 1.1 hosts read differently: ` +
		`line 5: key metadata.on is the string "on" in YAML 1.2 but the boolean true in YAML 1.1 (PyYAML); quote it: "on": ...; ` +
		`line 6: metadata.since: 2025-06-02 10:30:00 is the string "2025-06-02 10:30:00" in YAML 1.2 but a timestamp (a datetime, not a string) in YAML 1.1 (PyYAML); quote it: since: "2025-06-02 10:30:00"` + "\n"
	if code, out, _ := run(t, dir); code != lint.ExitSkipped || !strings.HasPrefix(out, want) {
		t.Errorf("lint = %d:\n%s\nwant it to start\n%s", code, out, want)
	}
	code, out, _ := run(t, "--frontmatter-portability", "warn", dir)
	if warned := strings.Replace(want, "skipped", "warning", 1); code != lint.ExitOK || !strings.HasPrefix(out, warned) || !strings.Contains(out, "skill://ci/SKILL.md") {
		t.Errorf("lint --frontmatter-portability warn = %d:\n%s", code, out)
	}
	_, out, _ = run(t, "--format", "json", dir)
	var r struct{ Problems []catalog.Problem }
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Problems) != 1 || !r.Problems[0].Ambiguous || !strings.Contains(out, `"ambiguous": true`) {
		t.Errorf("lint --format json = %v:\n%s", err, out)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

// TestNotAPluginFolder: a folder with none of skills/, agents/ or
// .claude-plugin/ serves nothing, so lint fails it; pointed one level too
// deep (plugin/skills), it names the parent to use instead. A folder with
// only one of the three is a plugin folder and passes.
func TestNotAPluginFolder(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, root string, files map[string]string) {
		t.Helper()
		for name, body := range files {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	skill := "---\nname: demo\ndescription: A demo skill.\n---\nBody.\n"
	agent := "---\nname: helper\ndescription: Helps.\n---\nDo things.\n"
	for _, tc := range []struct {
		name     string
		files    map[string]string
		dir      string // under the temporary root
		wantCode int
		want     []string // each must appear in stdout
	}{
		{"empty", map[string]string{}, ".", lint.ExitSkipped,
			[]string{".: skipped (layout): none of skills/, agents/ or .claude-plugin/ is here"}},
		{"skills folder itself", map[string]string{"plugin/skills/demo/SKILL.md": skill}, "plugin/skills", lint.ExitSkipped,
			[]string{"(layout)", "demo/SKILL.md makes this look like a skills/ folder: point at its parent"}},
		{"the plugin folder", map[string]string{"plugin/skills/demo/SKILL.md": skill}, "plugin", lint.ExitOK,
			[]string{"serves 1 skill"}},
		{"agents only", map[string]string{"agents/helper.md": agent}, ".", lint.ExitOK,
			[]string{"serves 0 skills and 1 agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			write(t, root, tc.files)
			code, out, errOut := run(t, filepath.Join(root, filepath.FromSlash(tc.dir)))
			if code != tc.wantCode {
				t.Fatalf("lint = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tc.wantCode == lint.ExitOK && strings.Contains(out, "(layout)") {
				t.Errorf("a plugin folder is reported as not one:\n%s", out)
			}
		})
	}
}

// TestLintReportsDotFileLinks: a symlink that would serve a dot-file under
// another name is reported, and lint exits as for a skipped item.
func TestLintReportsDotFileLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{"skills/hello/SKILL.md": "---\nname: hello\ndescription: Hello.\n---\n", ".env": "API_KEY=secret\n"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../.env", filepath.Join(dir, "skills", "hello", "notes.md")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, dir)
	if code != lint.ExitSkipped || !strings.Contains(out, "skills/hello/notes.md") || !strings.Contains(out, "dot-file") {
		t.Errorf("lint of a link to .env = %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d naming skills/hello/notes.md and the dot-file", code, out, errOut, lint.ExitSkipped)
	}
	if strings.Contains(out, "API_KEY") {
		t.Errorf("lint printed the dot-file's content:\n%s", out)
	}
}

// configMapsCopy writes the plugin folder src in the configmaps layout
// under a new folder: its files spread over two ConfigMap folders by
// parity, each key the path encoded by catalog.EncodeKey. moreKeys adds
// keys to the first folder.
func configMapsCopy(t *testing.T, src string, moreKeys map[string]string) string {
	t.Helper()
	root := t.TempDir()
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		cm := filepath.Join(root, "plugin-"+itoa(n%2))
		n++
		if err := os.MkdirAll(cm, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(cm, catalog.EncodeKey(filepath.ToSlash(rel))), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range moreKeys {
		if err := os.WriteFile(filepath.Join(root, "plugin-0", k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestLayoutConfigMaps: the example plugin spread over two ConfigMap
// folders lints exactly as the plugin folder does with --layout
// configmaps, and fails as a tree (it holds no skills/ there); a path in two
// ConfigMaps cannot be served, so it is a usage-level error naming both.
func TestLayoutConfigMaps(t *testing.T) {
	t.Parallel()
	_, want, _ := run(t, exampleDir)
	dir := configMapsCopy(t, exampleDir, nil)
	if code, out, errOut := run(t, "--layout", "configmaps", dir); code != lint.ExitOK || out != want {
		t.Errorf("lint --layout configmaps = %d, stderr %q, output differs from the tree's (-tree +configmaps):\n%s", code, errOut, cmp.Diff(want, out))
	}
	if code, out, _ := run(t, dir); code != lint.ExitSkipped || !strings.Contains(out, "none of skills/") {
		t.Errorf("lint (tree) of a configmaps folder = %d, want 1 and the layout problem:\n%s", code, out)
	}
	if code, out, _ := run(t, "--layout", "tree", exampleDir); code != lint.ExitOK || out != want {
		t.Errorf("lint --layout tree = %d, want the default's output:\n%s", code, out)
	}
	// plugin.json is in plugin-0 (first file walked); a copy in plugin-1 too.
	clash := configMapsCopy(t, exampleDir, nil)
	if err := os.WriteFile(filepath.Join(clash, "plugin-1", catalog.EncodeKey(".claude-plugin/plugin.json")), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "--layout=configmaps", clash)
	if code != lint.ExitUsage || out != "" || !strings.Contains(errOut, "plugin-0") || !strings.Contains(errOut, "plugin-1") {
		t.Errorf("lint of a path in two ConfigMaps = %d, stdout %q, stderr %q; want 2 naming both", code, out, errOut)
	}
	if code, _, errOut := run(t, "--layout", "flat", exampleDir); code != lint.ExitUsage || !strings.Contains(errOut, "layout") {
		t.Errorf("lint --layout flat = %d, %q; want 2 naming the layout", code, errOut)
	}
}
