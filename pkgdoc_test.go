// The module root holds only tests. This one: every package of the module has
// exactly one package comment (docs/design.md, "Adding a
// package"), so a reader always finds what a package owns in one place.
package skillssidecar_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// packageDocs maps each directory holding non-test Go files to the files
// among them that carry a package comment.
func packageDocs(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			out[dir] = append(out[dir], name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkOneDoc(docs map[string][]string) []string {
	var bad []string
	for dir, files := range docs {
		if len(files) != 1 {
			bad = append(bad, dir+": package comments in "+strings.Join(append([]string{}, files...), ", ")+" (want exactly one)")
		}
	}
	sort.Strings(bad)
	return bad
}

func TestEveryPackageHasOnePackageComment(t *testing.T) {
	docs := packageDocs(t, ".")
	if len(docs) < 20 {
		t.Fatalf("found %d packages, want the whole module", len(docs))
	}
	for _, b := range checkOneDoc(docs) {
		t.Error(b)
	}
}

// TestPackageCommentCheckCanFail feeds the check a package with none and one
// with two.
func TestPackageCommentCheckCanFail(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("none/a.go", "package none\n")
	write("two/a.go", "// Package two is documented here.\npackage two\n")
	write("two/b.go", "// Package two is documented here too.\npackage two\n")
	write("one/a.go", "// Package one is fine.\npackage one\n")
	write("one/b.go", "package one\n")
	write("one/a_test.go", "// Package one's test comment does not count.\npackage one\n")
	bad := checkOneDoc(packageDocs(t, root))
	if len(bad) != 2 || !strings.Contains(bad[0], "none") || !strings.Contains(bad[1], "two") {
		t.Errorf("check = %q, want the packages none and two flagged", bad)
	}
}
