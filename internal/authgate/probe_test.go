package authgate_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/authgate"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// answer writes a JSON-RPC response to the request r carries, with its id,
// as JSON-RPC 2.0 §5 has every server answer.
func answer(w http.ResponseWriter, r *http.Request, result string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(requestID(r))+`,"result":`+result+`}`)
}

// requestID reads r's body and returns its JSON-RPC id.
func requestID(r *http.Request) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &req)
	return req.ID
}

// probeReplies are upstreams answering the gate's probe with HTTP 200, one
// way each; only those marked admit answer it with a result for its own id.
var probeReplies = []struct {
	name  string
	reply func(w http.ResponseWriter, id string)
	admit bool
}{
	{"a result for the probe's id", func(w http.ResponseWriter, id string) {
		json200(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
	}, true},
	{"an SSE stream with notifications, then the result", func(w http.ResponseWriter, id string) {
		sse200(w, ": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"+
			"data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{}}\n\n")
	}, true},
	{"a result for the caller's id", func(w http.ResponseWriter, _ string) {
		json200(w, `{"jsonrpc":"2.0","id":"req-7","result":{}}`)
	}, false},
	{"a result for the id probes had before", func(w http.ResponseWriter, _ string) {
		json200(w, `{"jsonrpc":"2.0","id":"skills-sidecar/auth","result":{}}`)
	}, false},
	{"a result for a numeric id", func(w http.ResponseWriter, _ string) {
		json200(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}, false},
	{"an error for the probe's id", func(w http.ResponseWriter, id string) {
		json200(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"Method not found"}}`)
	}, false},
	{"an error with id null", func(w http.ResponseWriter, _ string) {
		json200(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	}, false},
	{"an empty body", func(w http.ResponseWriter, _ string) { json200(w, "") }, false},
	{"an empty body without a type", func(w http.ResponseWriter, _ string) { w.WriteHeader(http.StatusOK) }, false},
	{"text", func(w http.ResponseWriter, _ string) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "OK")
	}, false},
	{"a batch holding the result", func(w http.ResponseWriter, id string) {
		json200(w, `[{"jsonrpc":"2.0","id":`+id+`,"result":{}}]`)
	}, false},
	{"a request instead of a response", func(w http.ResponseWriter, id string) {
		json200(w, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	}, false},
	{"an SSE stream with the result for another id", func(w http.ResponseWriter, _ string) {
		sse200(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"req-7\",\"result\":{}}\n\n")
	}, false},
	{"an SSE stream without the response", func(w http.ResponseWriter, _ string) {
		sse200(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n: bye\n\n")
	}, false},
	{"an empty SSE stream", func(w http.ResponseWriter, _ string) { sse200(w, "") }, false},
	{"an SSE stream whose result is not JSON", func(w http.ResponseWriter, id string) {
		sse200(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\n\n")
	}, false},
}

func json200(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}

func sse200(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, body)
}

// TestGateTrustsOnlyItsOwnAnswer: an upstream that answers the probe with
// HTTP 200 but not with a result for the probe admits
// nobody, and what it said is not cached as an admission; the caller gets
// a JSON-RPC error with its own id.
func TestGateTrustsOnlyItsOwnAnswer(t *testing.T) {
	t.Parallel()
	for _, tt := range probeReplies {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var probes atomic.Int32
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				probes.Add(1)
				tt.reply(w, string(requestID(r)))
			}))
			defer up.Close()
			u, _ := url.Parse(up.URL)
			g := authgate.New(authgate.Options{Upstream: u})
			msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage(`"req-7"`), Method: "skills/list", Params: json.RawMessage(`{}`)}
			for i := range 2 {
				r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
				r.Header.Set("Authorization", "Bearer a")
				w := httptest.NewRecorder()
				if got := admit(g, w, r, msg); got != tt.admit {
					t.Fatalf("Admit #%d = %v, want %v (reply %s)", i, got, tt.admit, w.Body)
				}
				if tt.admit {
					continue
				}
				if w.Code == http.StatusOK {
					t.Errorf("refusal #%d status = 200, want an error status", i)
				}
				var e struct {
					ID    json.RawMessage `json:"id"`
					Error *struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == nil || string(e.ID) != `"req-7"` {
					t.Errorf("refusal #%d = %s, want a JSON-RPC error with the caller's id \"req-7\"", i, w.Body)
				}
			}
			want := int32(1)
			if !tt.admit {
				want = 2 // nothing cached
			}
			if n := probes.Load(); n != want {
				t.Errorf("probes for two calls = %d, want %d", n, want)
			}
		})
	}
}

// seenHeaders records, per JSON-RPC method, the headers and params._meta
// the upstream received.
type seenHeaders struct {
	mu   sync.Mutex
	hdr  map[string]http.Header
	meta map[string]string
}

func (s *seenHeaders) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(b, &m)
		s.mu.Lock()
		if s.hdr == nil {
			s.hdr, s.meta = map[string]http.Header{}, map[string]string{}
		}
		s.hdr[m.Method], s.meta[m.Method] = r.Header.Clone(), string(m.Params.Meta)
		s.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		h.ServeHTTP(w, r)
	})
}

func (s *seenHeaders) get(method string) (http.Header, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hdr[method], s.meta[method]
}

// TestProbeIsARequestOfTheCallersEra: a modern caller that sends no
// MCP-Protocol-Version header (its _meta is authoritative) still gets a
// probe that is a valid 2026-07-28 request: the version from its _meta,
// Mcp-Method, and the caller's _meta (docs/protocol.md §1). A legacy caller
// whose _meta holds only a progressToken gets a legacy ping.
func TestProbeIsARequestOfTheCallersEra(t *testing.T) {
	t.Parallel()
	var seen seenHeaders
	up := httptest.NewServer(seen.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w, r, `{}`) })))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tt := range []struct {
		name, params, method, version string
	}{
		{"modern", `{"_meta":` + meta + `}`, "server/discover", "2026-07-28"},
		{"legacy with a progress token", `{"_meta":{"progressToken":7}}`, "ping", ""},
	} {
		g := authgate.New(authgate.Options{Upstream: u})
		msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage(`1`), Method: "skills/list", Params: json.RawMessage(tt.params)}
		if !admit(g, httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil), msg) {
			t.Fatalf("%s: Admit = false", tt.name)
		}
		h, gotMeta := seen.get(tt.method)
		if h == nil {
			t.Fatalf("%s: the upstream got no %s probe", tt.name, tt.method)
		}
		if got := h.Get("Mcp-Protocol-Version"); got != tt.version {
			t.Errorf("%s: probe MCP-Protocol-Version = %q, want %q", tt.name, got, tt.version)
		}
		if tt.version == "" {
			if gotMeta != "" || h.Get("Mcp-Method") != "" {
				t.Errorf("%s: legacy probe carries _meta %s and Mcp-Method %q, want neither", tt.name, gotMeta, h.Get("Mcp-Method"))
			}
			continue
		}
		if got := h.Get("Mcp-Method"); got != tt.method {
			t.Errorf("%s: probe Mcp-Method = %q, want %q", tt.name, got, tt.method)
		}
		if gotMeta != meta {
			t.Errorf("%s: probe _meta = %s, want the caller's %s", tt.name, gotMeta, meta)
		}
	}
}

// byClientAddress admits only callers whose first X-Forwarded-For address
// (the client an ingress in front of the sidecar saw) is allowed, as an
// upstream that authorises by network identity does.
func byClientAddress(allowed string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-For"), ",")
		if strings.TrimSpace(first) != allowed {
			http.Error(w, "address not allowed", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestProbeCarriesTheCallersAddress: an upstream that authorises by client
// address judges the gate's probe as it judges the caller's own forwarded
// call: both see the same X-Forwarded-For, -Host and -Proto.
func TestProbeCarriesTheCallersAddress(t *testing.T) {
	t.Parallel()
	var seen seenHeaders
	u, _ := sidecar(t, seen.wrap(byClientAddress("203.0.113.7", demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true}))), sidecarOptions{})
	toolsCall := call{"tools/call", `{"name":"echo","arguments":{"message":"hi"}}`}
	for _, tt := range []struct {
		addr string
		want int
	}{{"203.0.113.7", http.StatusOK}, {"198.51.100.9", http.StatusForbidden}} {
		hdr := http.Header{"X-Forwarded-For": {tt.addr}}
		resp, body := do(t, u, toolsCall, true, http.Header{"X-Forwarded-For": {tt.addr}, "Mcp-Name": {"echo"}})
		if resp.StatusCode != tt.want {
			t.Fatalf("tools/call from %s = %d %s, want %d", tt.addr, resp.StatusCode, body, tt.want)
		}
		for _, c := range calls() {
			if resp, body := do(t, u, c, true, hdr); resp.StatusCode != tt.want {
				t.Errorf("%s from %s = %d %s, want %d as for tools/call", c.method, tt.addr, resp.StatusCode, body, tt.want)
			}
		}
	}
	fwd, _ := seen.get("tools/call")
	probe, _ := seen.get("server/discover")
	if probe == nil {
		t.Fatal("the upstream got no probe")
	}
	for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if probe.Get(k) != fwd.Get(k) || fwd.Get(k) == "" {
			t.Errorf("probe %s = %q, forwarded call's = %q; want the same, not empty", k, probe.Get(k), fwd.Get(k))
		}
	}
}

// TestWitnessAdmitsOnlyOnAResult: an answer to another request made on a
// caller's behalf (the overlay's first listing) admits that caller, as its
// probe's result would: no probe follows for it, but one does for a caller
// with other credentials. An answer that is not a result at HTTP 200
// admits nobody.
func TestWitnessAdmitsOnlyOnAResult(t *testing.T) {
	t.Parallel()
	var probes atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		answer(w, r, `{}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	g := authgate.New(authgate.Options{Upstream: u})
	msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage(`1`), Method: "skills/list", Params: json.RawMessage(`{}`)}
	as := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}
	parse := func(s string) rewrite.Message {
		m, err := rewrite.ParseMessage([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	result, jsonErr := parse(`{"jsonrpc":"2.0","id":9,"result":{"resources":[]}}`), parse(`{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"busy"}}`)
	for _, tt := range []struct {
		name   string
		status int
		answer rewrite.Message
		admits bool
	}{
		{"a result at 200", http.StatusOK, result, true},
		{"a result at 404", http.StatusNotFound, result, false},
		{"a JSON-RPC error at 200", http.StatusOK, jsonErr, false},
		{"no reply", 0, rewrite.Message{}, false},
	} {
		tok := strings.ReplaceAll(tt.name, " ", "-")
		if got := g.Witness(as(tok), tt.status, tt.answer, nil, true); got != tt.admits {
			t.Errorf("%s: Witness = %v, want %v", tt.name, got, tt.admits)
		}
		before := probes.Load()
		if !admit(g, httptest.NewRecorder(), as(tok), msg) {
			t.Fatalf("%s: Admit = false", tt.name)
		}
		if sent := probes.Load() - before; (sent == 0) != tt.admits {
			t.Errorf("%s: Admit sent %d probes; witnessed admission %v", tt.name, sent, tt.admits)
		}
		before = probes.Load()
		if !admit(g, httptest.NewRecorder(), as(tok+"-other"), msg) || probes.Load()-before != 1 {
			t.Errorf("%s: another caller's Admit sent %d probes, want 1", tt.name, probes.Load()-before)
		}
	}
}
