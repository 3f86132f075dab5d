package bridge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// ownErrorReplies lists the functions of src that build an error reply of
// the bridge's own as an HTTP response (jsonResponse around ErrorReply)
// instead of returning it for the proxy to write.
func ownErrorReplies(t *testing.T, name string, src any) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || !isIdent(c.Fun, "jsonResponse") {
				return true
			}
			for _, a := range c.Args {
				if inner, ok := a.(*ast.CallExpr); ok && isIdent(inner.Fun, "ErrorReply") {
					out = append(out, fn.Name.Name)
				}
			}
			return true
		})
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// ownRepliesAllowed are the functions still allowed to, each with why.
var ownRepliesAllowed = map[string]string{
	"translate": "the upstream's own refusal (its words) reshaped for the modern wire's 404: a reply of the upstream's",
}

// TestBridgeReturnsItsRefusals: the bridge's own refusals (a request the
// modern rules refuse, a caller over its share, an unknown session, bad
// params) are errors RoundTrip returns, which the proxy writes with the
// caller's id (docs/design.md, decision 11: one writer); only what is under way on a
// stream, and the upstream's own refusals, are written by the bridge.
func TestBridgeReturnsItsRefusals(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		for _, fn := range ownErrorReplies(t, name, nil) {
			if _, ok := ownRepliesAllowed[fn]; !ok {
				t.Errorf("%s: %s writes an error reply of the bridge's own: return it (refuse, failed) for the proxy to write", name, fn)
			}
		}
	}
}

// TestBridgeReturnsItsRefusalsCanFail: the check finds the way the bridge
// answered a refused modern request before.
func TestBridgeReturnsItsRefusalsCanFail(t *testing.T) {
	t.Parallel()
	src := `package bridge
func (t *Transport) bridge(req *http.Request, msg rewrite.Message) (*http.Response, error) {
	if r := CheckModern(req.Header, msg); r != nil {
		return jsonResponse(req, r.Status, ErrorReply(msg.ID, r.Code, r.Message, r.Data)), nil
	}
	return nil, nil
}`
	if got := ownErrorReplies(t, "transport.go", src); len(got) != 1 || got[0] != "bridge" {
		t.Errorf("ownErrorReplies = %v, want [bridge]", got)
	}
}
