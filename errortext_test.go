package skillssidecar_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// errorTextAllowed are the calls of Error() in packages that build replies
// whose text is known to hold no address or secret, each with why.
var errorTextAllowed = map[string]string{
	"internal/methods/subscribe.go:subscribe":       "notify.ErrLimit, the hub's own sentinel",
	"internal/methods/view.go:mustJSON":             "a panic, never a reply",
	"internal/authgate/gate.go:probeFailure":        "onbehalf.ReadReply's account of the probe's reply (transport errors are ErrUnreachable, mapped by the proxy)",
	"internal/proxy/forward.go:handleUpstreamError": "the proxy's own errTooLarge",
	"internal/proxy/proxy.go:serve":                 "rewrite's account of the client's own envelope",
	"internal/proxy/proxy.go:parseError":            "rewrite's account of the client's own envelope",
	"internal/proxy/proxy.go:readBody":              "the client's own connection, read by the proxy (its addresses are the client's)",
}

// errorTextCalls lists the calls x.Error() in src (a file at path) outside
// a method named Error, as "path:function".
func errorTextCalls(t *testing.T, path string, src any) []string {
	t.Helper()
	var out []string
	for _, fn := range funcDecls(t, path, src) {
		if fn.Name.Name == "Error" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && len(c.Args) == 0 {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Error" {
					out = append(out, filepath.ToSlash(path)+":"+fn.Name.Name)
				}
			}
			return true
		})
	}
	return out
}

// TestNoErrorTextInReplies: a package that builds JSON-RPC replies (one
// that imports internal/reply) never puts an error's text into one (DESIGN
// decision 7: no reply carries a secret; an error's text names socket
// addresses and URLs): it maps errors to fixed messages and lets the
// proxy log the cause. Found missing in the era bridge, which the
// behavioural guard (internal/proxy/secrets_test.go) did not reach.
func TestNoErrorTextInReplies(t *testing.T) {
	t.Parallel()
	pkgs := map[string][]string{} // dir -> its non-test Go files
	builds := map[string]bool{}   // dirs importing internal/reply
	err := filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
			return err
		}
		dir := filepath.Dir(path)
		pkgs[dir] = append(pkgs[dir], path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/internal/reply" {
				builds[dir] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !builds[filepath.FromSlash("internal/bridge")] {
		t.Fatal("internal/bridge does not import internal/reply: the guard's scope is wrong")
	}
	for dir := range builds {
		for _, path := range pkgs[dir] {
			for _, c := range errorTextCalls(t, path, nil) {
				if _, ok := errorTextAllowed[c]; !ok {
					t.Errorf("%s calls Error() in a package that builds replies: map the error to a fixed message (or allow it here, saying why)", c)
				}
			}
		}
	}
}

// TestNoErrorTextCanFail: the check finds the bridge's old way of
// answering a session it could not open.
func TestNoErrorTextCanFail(t *testing.T) {
	t.Parallel()
	src := `package bridge
func sessionFailure(s *session) []byte {
	return ErrorReply(nil, -32603, "era bridge: cannot open a legacy session: "+s.err.Error(), nil)
}
func (e *x) Error() string { return e.err.Error() }`
	got := errorTextCalls(t, "internal/bridge/transport.go", src)
	if len(got) != 1 || got[0] != "internal/bridge/transport.go:sessionFailure" {
		t.Errorf("errorTextCalls = %v, want the one call in sessionFailure", got)
	}
}
