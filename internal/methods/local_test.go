package methods_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// localRequest builds the *http.Request and parsed message ServeLocal gets
// from the proxy for one request.
func localRequest(t testing.TB, modern bool, method string, params map[string]any) (*http.Request, rewrite.Message) {
	t.Helper()
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	if modern {
		p["_meta"] = map[string]any{sidecartest.MetaVersionKey: sidecartest.ModernVersion, sidecartest.MetaCapsKey: map[string]any{}}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := rewrite.ParseMessage(body)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	r.Host = "127.0.0.1"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if modern {
		r.Header.Set("MCP-Protocol-Version", sidecartest.ModernVersion)
		r.Header.Set("Mcp-Method", method)
		if n, ok := params[wire.NameParam(method)].(string); ok {
			r.Header.Set("Mcp-Name", wire.EncodeHeaderValue(n)) // required with a target (2026-07-28)
		}
	}
	return r, msg
}

// scribbler is a ResponseWriter that keeps a copy of what it is given and
// then overwrites the caller's slice: a stand-in for a caller that mutates
// the result it got. If the handler wrote a buffer it shares with later
// requests, the next caller would see the scribbles.
type scribbler struct {
	header http.Header
	got    []byte
}

func (s *scribbler) Header() http.Header {
	if s.header == nil {
		s.header = http.Header{}
	}
	return s.header
}

func (s *scribbler) WriteHeader(int) {}

func (s *scribbler) Write(p []byte) (int, error) {
	s.got = append(s.got, p...)
	for i := range p {
		p[i] = 'X'
	}
	return len(p), nil
}

// checkIsolated serves the same request three times, the second time to a
// caller that mutates what it receives, and reports whether the third caller
// got what the first did.
func checkIsolated(serve func(w http.ResponseWriter)) error {
	first := httptest.NewRecorder()
	serve(first)
	serve(&scribbler{})
	third := httptest.NewRecorder()
	serve(third)
	if !bytes.Equal(first.Body.Bytes(), third.Body.Bytes()) {
		return fmt.Errorf("a caller's mutation reached the next caller:\nfirst %s\nthird %s", first.Body.Bytes(), third.Body.Bytes())
	}
	return nil
}

func TestCheckIsolatedCatchesSharedBuffers(t *testing.T) {
	t.Parallel()
	shared := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	leaky := func(w http.ResponseWriter) { _, _ = w.Write(shared) }
	if err := checkIsolated(leaky); err == nil {
		t.Fatalf("checkIsolated accepted a handler that writes one shared buffer")
	}
	fresh := func(w http.ResponseWriter) { _, _ = w.Write(append([]byte(nil), shared...)) }
	if err := checkIsolated(fresh); err != nil {
		t.Fatalf("checkIsolated(fresh copies) = %v", err)
	}
}

// staticTools is a ToolSource with fixed tools, for in-process tests.
type staticTools map[string]json.RawMessage

func (s staticTools) Tools(*http.Request, rewrite.Message) (map[string]json.RawMessage, error) {
	return s, nil
}

// TestResultsIsolatedBetweenCallers: a caller that mutates the bytes of its
// result cannot change what the next caller of any local method gets.
func TestResultsIsolatedBetweenCallers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginAgents())
	sidecartest.WriteTree(t, dir, pluginPDF())
	snap, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools := staticTools{}
	for _, n := range []string{"zeta", "alpha", "mid", "beta", "gamma", "delta"} {
		tools[n] = json.RawMessage(`{"name":"` + n + `","inputSchema":{"type":"object"}}`)
	}
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }, Tools: tools, PageSize: 3})
	calls := append(localCalls()[:3],
		struct {
			method string
			params map[string]any
		}{"resources/read", map[string]any{"uri": "skill://pdf-processing/assets/logo.png"}},
		struct {
			method string
			params map[string]any
		}{"resources/read", map[string]any{"uri": "skill://pdf-processing/SKILL.md"}},
		struct {
			method string
			params map[string]any
		}{"resources/directory/read", map[string]any{"uri": "skill://pdf-processing"}},
		struct {
			method string
			params map[string]any
		}{"agents/get", map[string]any{"name": "reviewer"}},
		struct {
			method string
			params map[string]any
		}{"resources/list", map[string]any{"cursor": "skills-sidecar/r1:"}},
	)
	for _, modern := range []bool{false, true} {
		for _, call := range calls {
			t.Run(fmt.Sprintf("%s/modern=%v", call.method, modern), func(t *testing.T) {
				t.Parallel()
				serve := func(w http.ResponseWriter) {
					r, msg := localRequest(t, modern, call.method, call.params)
					if !serveLocal(h, w, r, msg) {
						t.Fatalf("ServeLocal(%s) = false, want the sidecar to answer", call.method)
					}
				}
				rec := httptest.NewRecorder()
				serve(rec)
				if rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte(`"error"`)) {
					t.Fatalf("%s = HTTP %d %s, want a result", call.method, rec.Code, rec.Body)
				}
				if err := checkIsolated(serve); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// load1000 loads a plugin of 1,000 generated skills, for benchmarks.
func load1000(b testing.TB) *catalog.Snapshot {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{}
	for i := range 1000 {
		maps.Copy(files, genSkill(genName(i), genFiles(i)))
	}
	sidecartest.WriteTree(b, dir, files)
	snap, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if n := len(snap.Skills()); n != 1000 {
		b.Fatalf("loaded %d skills, want 1000", n)
	}
	return snap
}

// BenchmarkSkillsList1000 is the first page of skills/list over 1,000
// skills, answered in process by Handler.ServeLocal; compare with
// BenchmarkGoSDKResourcesList1000, the first page of a go-sdk server's own
// resources/list over 1,000 resources answered by its HTTP handler.
func BenchmarkSkillsList1000(b *testing.B) {
	snap := load1000(b)
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }})
	for _, modern := range []bool{false, true} {
		name := "legacy"
		if modern {
			name = "modern"
		}
		b.Run(name, func(b *testing.B) {
			_, msg := localRequest(b, modern, "skills/list", nil)
			req, _ := localRequest(b, modern, "skills/list", nil)
			warm := httptest.NewRecorder()
			serveLocal(h, warm, req, msg) // builds the view once, as the first request after a reload does
			if warm.Code != http.StatusOK {
				b.Fatalf("skills/list = HTTP %d %s", warm.Code, warm.Body)
			}
			b.SetBytes(int64(warm.Body.Len()))
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				serveLocal(h, rec, req, msg)
			}
		})
	}
}

// BenchmarkGoSDKResourcesList1000 is the go-sdk reference for
// BenchmarkSkillsList1000: a stateless go-sdk server's HTTP handler
// answering the first page (100, the sidecar's default page size) of
// resources/list over 1,000 resources, JSON response, in process.
func BenchmarkGoSDKResourcesList1000(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{PageSize: methods.DefaultPageSize})
	for i := range 1000 {
		uri := fmt.Sprintf("test://res/%04d", i)
		s.AddResource(&mcp.Resource{URI: uri, Name: fmt.Sprintf("res-%04d", i), Description: "Generated resource.", MIMEType: "text/markdown", Size: 123},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
	}
	h := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	newReq := func() *http.Request {
		r, _ := localRequest(b, true, "resources/list", nil)
		return r
	}
	warm := httptest.NewRecorder()
	h.ServeHTTP(warm, newReq())
	if warm.Code != http.StatusOK || !bytes.Contains(warm.Body.Bytes(), []byte(`"resources":[`)) {
		b.Fatalf("go-sdk resources/list = HTTP %d %s", warm.Code, warm.Body)
	}
	b.SetBytes(int64(warm.Body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		r := newReq() // a request body can be read once
		b.StartTimer()
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// serveLocal asks h about msg and, as the proxy does, writes the answer to
// w with msg's id; it reports whether h answered.
func serveLocal(h *methods.Handler, w http.ResponseWriter, r *http.Request, msg rewrite.Message) bool {
	rep, ok := h.ServeLocal(r, msg)
	if ok {
		proxy.WriteReply(w, msg.ID, rep)
	}
	return ok
}
