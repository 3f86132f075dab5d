package skillssidecar_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/skills-sidecar/skills-sidecar"

// importGraph maps each package of the module (by import path) to the
// module packages its non-test files import.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	g := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := module + "/" + filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module+"/") && !slices.Contains(g[pkg], p) {
				g[pkg] = append(g[pkg], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// path returns a chain of imports from one package to another, or nil.
func path(g map[string][]string, from, to string) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if p == to {
			return []string{p}
		}
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, q := range g[p] {
			if rest := walk(q); rest != nil {
				return append([]string{p}, rest...)
			}
		}
		return nil
	}
	return walk(from)
}

// belowProxy are the packages the proxy's answers and verdicts come from:
// they return values, and the proxy alone writes replies (docs/design.md, decision 11).
var belowProxy = []string{"internal/methods", "internal/upstreamfiles", "internal/authgate", "internal/onbehalf", "internal/reply", "internal/notify", "internal/bridge", "internal/rewrite", "internal/catalog", "internal/metrics", "internal/hop", "internal/stdio", "internal/caller", "internal/wire", "internal/idmap"}

// testOnly are the packages only tests import: the helpers that start the
// sidecar and its upstreams, and the test peers.
var testOnly = []string{"internal/sidecar/sidecartest", "internal/testupstream", "internal/faultserver", "internal/h1fault", "internal/stdioserver", "internal/kubeletvolume", "internal/testwait", "internal/deadaddr", "internal/metrics/metricstest"}

// importViolations lists what breaks the import rules in g: a package
// below the proxy that reaches it, and cmd building the proxy itself
// rather than through the assembly (internal/sidecar).
func importViolations(g map[string][]string) []string {
	proxy := module + "/internal/proxy"
	var bad []string
	for _, p := range belowProxy {
		if chain := path(g, module+"/"+p, proxy); chain != nil {
			bad = append(bad, strings.Join(chain, " -> "))
		}
	}
	for _, p := range []string{"internal/proxy", "internal/onbehalf", "internal/reply"} {
		for _, q := range g[module+"/"+p] {
			if strings.HasSuffix(q, "/internal/methods") || strings.HasSuffix(q, "/internal/authgate") {
				bad = append(bad, p+" imports "+q)
			}
		}
	}
	// The upstream-served files give verdicts; the entries they change are
	// methods' to encode, so the arrow runs from methods to them only.
	if chain := path(g, module+"/internal/upstreamfiles", module+"/internal/methods"); chain != nil {
		bad = append(bad, strings.Join(chain, " -> "))
	}
	// The tests' helpers and peers are built as ordinary packages (a
	// _test.go file cannot be imported) but belong to the tests alone.
	for p, imports := range g {
		for _, q := range imports {
			if slices.Contains(testOnly, strings.TrimPrefix(q, module+"/")) && !slices.Contains(testOnly, strings.TrimPrefix(p, module+"/")) {
				bad = append(bad, p+" imports "+q+", which only tests may")
			}
		}
	}
	for _, q := range g[module+"/cmd/skills-sidecar"] {
		for _, part := range []string{"/internal/proxy", "/internal/methods", "/internal/authgate", "/internal/onbehalf"} {
			if strings.HasSuffix(q, part) {
				bad = append(bad, "cmd/skills-sidecar imports "+q+": the sidecar is assembled in internal/sidecar")
			}
		}
	}
	return bad
}

// TestImportGraph: the arrows run one way: nothing below the
// proxy imports it, the proxy knows the sidecar's own methods and the gate
// only by the interfaces it declares, and cmd builds none of them itself.
func TestImportGraph(t *testing.T) {
	t.Parallel()
	if bad := importViolations(importGraph(t)); len(bad) > 0 {
		t.Errorf("import rules broken:\n%s", strings.Join(bad, "\n"))
	}
}

// TestImportGraphCanFail: with an edge from onbehalf to the proxy added,
// the check reports methods reaching the proxy through it.
func TestImportGraphCanFail(t *testing.T) {
	t.Parallel()
	g := importGraph(t)
	ob := module + "/internal/onbehalf"
	g[ob] = append(g[ob], module+"/internal/proxy")
	bad := importViolations(g)
	from, to := module+"/internal/methods -> ", ob+" -> "+module+"/internal/proxy"
	if !slices.ContainsFunc(bad, func(v string) bool { return strings.HasPrefix(v, from) && strings.HasSuffix(v, to) }) {
		t.Errorf("violations with onbehalf -> proxy = %q, want %q...%q among them", bad, from, to)
	}
}

// TestImportGraphCanFailUpstreamFiles: with an edge from upstreamfiles to
// methods added, the check reports it.
func TestImportGraphCanFailUpstreamFiles(t *testing.T) {
	t.Parallel()
	g := importGraph(t)
	uf := module + "/internal/upstreamfiles"
	g[uf] = append(g[uf], module+"/internal/methods")
	want := uf + " -> " + module + "/internal/methods"
	if bad := importViolations(g); !slices.Contains(bad, want) {
		t.Errorf("violations with upstreamfiles -> methods = %q, want %q among them", bad, want)
	}
}

// TestOneBuilderOfCallsForACaller: outside package onbehalf (and the
// proxy's relay, which forwards the caller's own request), no package of
// the request path builds an HTTP request: a request made on a caller's
// behalf has one builder, with one header list.
func TestOneBuilderOfCallsForACaller(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"internal/methods", "internal/upstreamfiles", "internal/authgate", "internal/catalog", "internal/rewrite", "internal/reply"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "http.NewRequest") {
				t.Errorf("%s builds an HTTP request; requests on a caller's behalf belong to internal/onbehalf", f)
			}
		}
	}
}

// TestImportGraphCanFailTestOnly: with an edge from methods to
// testupstream added, the check reports it.
func TestImportGraphCanFailTestOnly(t *testing.T) {
	t.Parallel()
	g := importGraph(t)
	m := module + "/internal/methods"
	g[m] = append(g[m], module+"/internal/testupstream")
	want := m + " imports " + module + "/internal/testupstream, which only tests may"
	if bad := importViolations(g); !slices.Contains(bad, want) {
		t.Errorf("violations with methods -> testupstream = %q, want %q among them", bad, want)
	}
}
