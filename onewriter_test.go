package skillssidecar_test

import (
	"go/ast"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// writerPackages own the bytes of what the sidecar answers itself:
// package reply encodes replies and events (its values' one encoding),
// package proxy writes them. Every other package returns values.
var writerPackages = []string{"internal/reply", "internal/proxy"}

// upstreamPackages are MCP servers of their own (test peers, the demo
// upstream): what they write is the upstream's, not the sidecar's.
var upstreamPackages = []string{"internal/faultserver", "internal/demo", "internal/stdioserver", "internal/modernonly"}

// ownWritingAllowed are the functions outside writerPackages still allowed
// to build reply or event bytes, each with why.
var ownWritingAllowed = map[string]string{
	"internal/notify/frame.go:frame":                "the hub's notifications (no reply), which the proxy's streams write as they come",
	"internal/rewrite/":                             "the pure transformations of the upstream's bytes the proxy applies (its events reframed, a listen's acknowledgement)",
	"internal/methods/hostcompat.go:appendCompat":   "a response hook: the upstream's own reply (its id) edited in the proxy's hook path, its method-not-found made the sidecar's page",
	"internal/methods/resources.go:appendResources": "a response hook: the upstream's own reply (its id) edited in the proxy's hook path, its method-not-found made the sidecar's page",
	"internal/upstreamfiles/readscan.go:":           "a parser's table of the members of a JSON-RPC message, which builds nothing",
	"internal/stdio/exchange.go:respond":            "the stdio adapter stands in for the upstream's HTTP server in front of a process: the process's replies are the upstream's; its own (encoded by package reply) are still returned in a response rather than as values, as the bridge's were (left for a change of its own)",
	"internal/stdio/exchange.go:stream":             "the stdio adapter's reply stream of the process's messages (the upstream's), framed by package reply",
}

// ownWriting lists, as "path:function: what", the places in src (a Go
// file at path) that build what only the writer packages may: an
// http.Response (a reply made up below the proxy), an SSE frame (a string
// starting an event: or data: line), or a JSON-RPC reply envelope (a
// "jsonrpc" member together with a "result" or "error" one, as a string
// or as a composite literal's keys).
func ownWriting(t *testing.T, path string, src any) []string {
	t.Helper()
	var out []string
	for _, fn := range funcDecls(t, path, src) {
		at := filepath.ToSlash(path) + ":" + fn.Name.Name + ": "
		var jsonrpc, member bool
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if s, ok := n.Type.(*ast.SelectorExpr); ok && s.Sel.Name == "Response" {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == "http" {
						out = append(out, at+"http.Response")
					}
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				v, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				for _, frame := range []string{"event:", "data:"} {
					if strings.HasPrefix(v, frame) || strings.Contains(v, "\n"+frame) {
						out = append(out, at+"SSE frame "+strconv.Quote(frame))
					}
				}
				if v == "jsonrpc" || strings.Contains(v, `"jsonrpc"`) {
					jsonrpc = true
				}
				if strings.Contains(v, `"result":`) || strings.Contains(v, `"error":`) {
					member = true
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.BasicLit); ok && (k.Value == `"result"` || k.Value == `"error"`) {
					member = true
				}
			}
			return true
		})
		if jsonrpc && member {
			out = append(out, at+"JSON-RPC reply")
		}
	}
	return out
}

// TestOneWriter: the proxy is the only writer of what the sidecar answers
// itself (docs/design.md, decision 11): no package below it makes up an
// HTTP response, frames an SSE event or builds a JSON-RPC reply; they
// return values (package reply's: an Error, a Reply, an Answer), which
// the proxy writes with the caller's id. Found missing in the era bridge,
// which wrote its own replies (a made-up http.Response around its own
// JSON-RPC error) and events.
func TestOneWriter(t *testing.T) {
	t.Parallel()
	eachSource(t, slices.Concat(writerPackages, upstreamPackages), func(path string) {
		for _, w := range ownWriting(t, path, nil) {
			if !writingAllowed(w) {
				t.Errorf("%s: return a value of package reply for the proxy to write (or allow it here, saying why)", w)
			}
		}
	})
}

// eachSource calls check with every non-test Go file of the packages
// under internal/ but those in skip, and fails when there is none (the
// guard's scope would be wrong).
func eachSource(t *testing.T, skip []string, check func(path string)) {
	t.Helper()
	var files int
	err := filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
			return err
		}
		if slices.Contains(skip, filepath.ToSlash(filepath.Dir(path))) {
			return nil
		}
		files++
		check(path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no files checked: the guard's scope is wrong")
	}
}

// writingAllowed reports whether the finding w ("path:function: what") is
// in ownWritingAllowed, by its path and function, its file, or its
// package's directory.
func writingAllowed(w string) bool {
	for k := range ownWritingAllowed {
		if strings.HasPrefix(w, k) {
			return true
		}
	}
	return false
}

// TestOneWriterCanFail: the check finds each way the era bridge wrote its
// own replies before: a made-up http.Response, its own SSE framing, and
// its own JSON-RPC error envelope.
func TestOneWriterCanFail(t *testing.T) {
	t.Parallel()
	src := `package bridge
func jsonResponse(req *http.Request, status int, body []byte) *http.Response {
	return &http.Response{StatusCode: status, Request: req, Body: io.NopCloser(bytes.NewReader(body))}
}
func eventBytes(data []byte) []byte {
	out := append([]byte("event: message\ndata: "), bytes.ReplaceAll(data, []byte("\n"), []byte("\ndata: "))...)
	return append(out, '\n', '\n')
}
func ErrorReply(id json.RawMessage, code int, message string, data any) []byte {
	return marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code}})
}
func inputRequired(id json.RawMessage) []byte {
	out := append([]byte(` + "`" + `{"jsonrpc":"2.0","id":` + "`" + `), id...)
	return append(out, ` + "`" + `,"result":{}}` + "`" + `...)
}
func request(id json.RawMessage) []byte {
	return marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "initialize"})
}`
	got := ownWriting(t, "internal/bridge/x.go", src)
	want := []string{
		"internal/bridge/x.go:jsonResponse: http.Response",
		`internal/bridge/x.go:eventBytes: SSE frame "event:"`,
		`internal/bridge/x.go:eventBytes: SSE frame "data:"`,
		`internal/bridge/x.go:eventBytes: SSE frame "data:"`,
		"internal/bridge/x.go:ErrorReply: JSON-RPC reply",
		"internal/bridge/x.go:inputRequired: JSON-RPC reply",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ownWriting =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
