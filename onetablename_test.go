package skillssidecar_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tableNameLiteralsAllowed are string literals spelled as a table's name
// that are not the table's, each with why ("path: name").
var tableNameLiteralsAllowed = map[string]string{
	"internal/metrics/metrics.go: bridge_sessions": "the gauge skills_sidecar_bridge_sessions: a metric's name, not a table's label",
}

// documentedTableNames are the names (data.table, the table label of
// skills_sidecar_caller_refusals_total) that open a row of a table in
// docs/security.md's section "Callers and their shares".
func documentedTableNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Callers and their shares\n")
	if !ok {
		t.Fatal("docs/security.md has no section Callers and their shares")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\s*\\| `([a-z_]+)`").FindAllStringSubmatch(section, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/security.md lists no table")
	}
	return out
}

// tableNameLiterals returns, in src (a Go file at path; nil reads the
// file), the string literals equal to one of names: those that are a
// constant's value (owners, "path: name") and the others (uses,
// "path:line: name").
func tableNameLiterals(t *testing.T, path string, src any, names []string) (owners, uses []string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.ToSlash(path)
	for _, d := range f.Decls {
		isConst := false
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			isConst = true
		}
		ast.Inspect(d, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !slices.Contains(names, v) {
				return true
			}
			if isConst {
				owners = append(owners, path+": "+v)
			} else {
				uses = append(uses, path+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+v)
			}
			return true
		})
	}
	return owners, uses
}

// TestOneTableName: each bounded table's name (a refusal's data.table and
// the table label of its metric) is spelled once, as a constant of the
// package that owns the table, which every other package uses. Found
// spelled twice: the stdio tables' names, once where the transport builds
// its default tables and again where the assembly builds them.
func TestOneTableName(t *testing.T) {
	t.Parallel()
	names := documentedTableNames(t)
	owners := map[string][]string{}
	eachSource(t, nil, func(path string) {
		own, uses := tableNameLiterals(t, path, nil, names)
		for _, o := range own {
			_, name, _ := strings.Cut(o, ": ")
			owners[name] = append(owners[name], o)
		}
		for _, u := range uses {
			file, rest, _ := strings.Cut(u, ":")
			_, name, _ := strings.Cut(rest, ": ")
			if _, ok := tableNameLiteralsAllowed[file+": "+name]; !ok {
				t.Errorf("%s: the table's name spelled out: use the constant of the package that owns the table (or allow it here, saying why)", u)
			}
		}
	})
	for _, name := range names {
		if len(owners[name]) != 1 {
			t.Errorf("table %s (docs/security.md) is the value of %d constants %v, want one: its owner's", name, len(owners[name]), owners[name])
		}
	}
}

// TestOneTableNameCanFail: the check finds a table's name spelled where a
// table is built, and counts the constant that owns it apart.
func TestOneTableNameCanFail(t *testing.T) {
	t.Parallel()
	src := `package sidecar
const TableQueuedBytes = "stdio_queued_bytes"
func (s *Sidecar) startStdio() {
	_ = caller.NewTable(caller.TableOptions{Name: "stdio_sessions", Cap: 32})
}`
	owners, uses := tableNameLiterals(t, "internal/sidecar/sidecar.go", src, []string{"stdio_sessions", "stdio_queued_bytes"})
	if len(owners) != 1 || owners[0] != "internal/sidecar/sidecar.go: stdio_queued_bytes" {
		t.Errorf("owners = %v, want [internal/sidecar/sidecar.go: stdio_queued_bytes]", owners)
	}
	if len(uses) != 1 || uses[0] != "internal/sidecar/sidecar.go:4: stdio_sessions" {
		t.Errorf("uses = %v, want [internal/sidecar/sidecar.go:4: stdio_sessions]", uses)
	}
}
