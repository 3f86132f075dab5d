package skillssidecar_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// funcDecls parses src (a Go file at path; nil reads the file) and
// returns its functions that have bodies: what the guards that read the
// code function by function (onebuilder_test.go, onewriter_test.go,
// errortext_test.go) walk.
func funcDecls(t *testing.T, path string, src any) []*ast.FuncDecl {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.FuncDecl
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
			out = append(out, fn)
		}
	}
	return out
}
