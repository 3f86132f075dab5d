package rewrite

import (
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pureImports returns everything the package may import: bytes and JSON,
// no network, clock, logger or metrics (docs/design.md, decision 11).
func pureImports() []string {
	return []string{"bytes", "encoding/binary", "encoding/json", "errors", "fmt", "io", "slices", "strconv", "strings", "unicode/utf8"}
}

// impureImports returns the imports of the non-test Go files in dir that
// are not in allowed.
func impureImports(dir string, allowed []string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var bad []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowed, path) {
				bad = append(bad, filepath.Base(name)+": "+path)
			}
		}
	}
	return bad, nil
}

func TestImportsArePure(t *testing.T) {
	t.Parallel()
	bad, err := impureImports(".", pureImports())
	if err != nil || len(bad) > 0 {
		t.Errorf("impure imports = %q, %v; want none", bad, err)
	}
}

// TestImportCheckCanFail runs the check with "io" disallowed: sse.go must
// be reported.
func TestImportCheckCanFail(t *testing.T) {
	t.Parallel()
	allowed := slices.DeleteFunc(pureImports(), func(s string) bool { return s == "io" })
	bad, err := impureImports(".", allowed)
	if err != nil || !slices.Contains(bad, "sse.go: io") {
		t.Errorf("impure imports without io allowed = %q, %v; want sse.go: io reported", bad, err)
	}
}
