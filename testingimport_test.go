package skillssidecar_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// testingImports lists "file: import" for every non-test Go file under root
// that imports the standard library's testing packages (testing,
// testing/fstest, ...): production code must not link them in.
func testingImports(t *testing.T, root string) []string {
	t.Helper()
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "testing" || strings.HasPrefix(p, "testing/") {
				bad = append(bad, path+": "+p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	return bad
}

func TestProductionCodeImportsNoTestingPackage(t *testing.T) {
	for _, b := range testingImports(t, ".") {
		t.Error(b)
	}
}

// TestTestingImportCheckCanFail: a non-test file importing testing/fstest
// is flagged, the same import in a _test.go file is not.
func TestTestingImportCheckCanFail(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := mkdirWrite(p, body); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\n\nimport _ \"testing/fstest\"\n")
	write("a/a_test.go", "package a\n\nimport _ \"testing\"\n")
	write("b/b.go", "package b\n\nimport _ \"strings\"\n")
	bad := testingImports(t, root)
	if len(bad) != 1 || !strings.HasSuffix(bad[0], "a.go: testing/fstest") {
		t.Errorf("check = %q, want only a/a.go flagged", bad)
	}
}

func mkdirWrite(p, body string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(body), 0o644)
}
