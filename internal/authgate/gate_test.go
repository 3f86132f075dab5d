package authgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/authgate"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

const token = "s3cret"

// protected starts the demo upstream behind go-sdk's bearer-token middleware
// (stateless or stateful) and the sidecar in front of it with the gate on
// (or off), serving the example plugin.
func protected(t *testing.T, stateless, gateOn bool) string {
	t.Helper()
	u, _ := sidecar(t, bearer(demo.Handler(&mcp.StreamableHTTPOptions{Stateless: stateless}), map[string]string{token: ""}),
		sidecarOptions{gateOff: !gateOn})
	return u
}

// bearer puts h behind go-sdk's bearer-token middleware admitting the
// tokens of users (token → user id).
func bearer(h http.Handler, users map[string]string) http.Handler {
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := users[tok]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id, Expiration: time.Now().Add(time.Hour)}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: "https://example.test/.well-known/oauth-protected-resource"})(h)
}

// sidecarOptions say how sidecar builds the sidecar; the zero value is the
// gate on with its default headers and no upstream-files overlay.
type sidecarOptions struct {
	gateOff     bool
	overlay     bool     // upstreamfiles.NewOverlay, as --upstream-files auto does
	pageSize    int      // 0: the default
	authHeaders []string // --auth-headers: the gate's and the calls on a caller's behalf; nil: the defaults
}

// sidecar serves up as the upstream and starts the sidecar in front of it
// as the binary assembles it, serving the example plugin; it returns the
// sidecar's URL and the catalog.
func sidecar(t *testing.T, up http.Handler, o sidecarOptions) (string, *catalog.Snapshot) {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	s := sidecartest.Start(t, srv.URL, sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles = "upstream", "off"
		if o.gateOff {
			c.AuthGate = "none"
		}
		if o.overlay {
			c.UpstreamFiles = "auto"
		}
		if o.pageSize > 0 {
			c.PageSize = o.pageSize
		}
		if o.authHeaders != nil {
			c.AuthHeaders = strings.Join(o.authHeaders, ",")
		}
	}})
	return s.URL, s.Snapshot()
}

// eras are the two wires every gate test runs on: a legacy session, and
// 2026-07-28 stateless requests.
var eras = []struct {
	name      string
	stateless bool
}{{"legacy", false}, {"modern", true}}

type call struct{ method, params string }

func calls() []call {
	return []call{
		{"skills/list", `{}`},
		{"skills/get", `{"uri":"skill://incident-summary/SKILL.md"}`},
		{"agents/list", `{}`},
		{"agents/get", `{"name":"billing-triage"}`},
		{"resources/directory/read", `{"uri":"skill://acme/billing/refunds"}`},
		{"resources/read", `{"uri":"skill://incident-summary/SKILL.md"}`},
	}
}

// do sends one request; modern adds the 2026-07-28 _meta and headers.
func do(t *testing.T, u string, c call, modern bool, hdr http.Header) (*http.Response, string) {
	t.Helper()
	params := c.params
	if modern {
		params = strings.Replace(params, "{", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`, 1)
		params = strings.Replace(params, ",}", "}", 1)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, c.method, params)
	if strings.HasPrefix(c.method, "notifications/") {
		body = fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, c.method)
	}
	h := hdr.Clone()
	if h == nil {
		h = http.Header{}
	}
	if modern {
		h.Set("MCP-Protocol-Version", "2026-07-28")
		h.Set("Mcp-Method", c.method)
		var p struct {
			URI string `json:"uri"`
		}
		if c.method == "resources/read" && json.Unmarshal([]byte(c.params), &p) == nil {
			h.Set("Mcp-Name", p.URI) // as a client must: the upstream may get this read
		}
	}
	resp, b := sidecartest.Post(t, u, body, h)
	return resp, string(b)
}

// legacySession opens a session through the sidecar with hdr.
func legacySession(t *testing.T, u string, hdr http.Header) http.Header {
	t.Helper()
	h := hdr.Clone()
	resp, body := do(t, u, call{"initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`}, false, h)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize with the token = %d %s", resp.StatusCode, body)
	}
	h.Set("Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	if r, b := do(t, u, call{"notifications/initialized", `{}`}, false, h); r.StatusCode >= 300 {
		t.Fatalf("initialized = %d %s", r.StatusCode, b)
	}
	return h
}

func TestGateRefusesWithoutToken(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			u := protected(t, era.stateless, true)
			good := http.Header{"Authorization": {"Bearer " + token}}
			bad := http.Header{"Authorization": {"Bearer wrong"}}
			if !era.stateless {
				good = legacySession(t, u, good)
				bad.Set("Mcp-Session-Id", good.Get("Mcp-Session-Id")) // a stolen session id is not enough
			}
			for _, c := range calls() {
				for _, caller := range []struct {
					name string
					hdr  http.Header
				}{{"no token", http.Header{}}, {"wrong token", bad}} {
					resp, body := do(t, u, c, era.stateless, caller.hdr)
					if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata") {
						t.Errorf("%s with %s = %d (WWW-Authenticate %q), want 401 with the upstream's WWW-Authenticate", c.method, caller.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
					}
					if strings.Contains(body, "skill://") || strings.Contains(body, "inputSchema") {
						t.Errorf("%s with %s leaked content: %s", c.method, caller.name, body)
					}
				}
				resp, body := do(t, u, c, era.stateless, good)
				if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
					t.Errorf("%s with the token = %d %s, want a result", c.method, resp.StatusCode, body)
				}
			}
		})
	}
}

// TestGateOffLeaks shows the refusal check can fail: with the gate off the
// same tokenless caller gets the skill listing.
func TestGateOffLeaks(t *testing.T) {
	t.Parallel()
	u := protected(t, true, false)
	resp, body := do(t, u, call{"skills/list", `{}`}, true, http.Header{})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "skill://") {
		t.Fatalf("gate off: skills/list without a token = %d %s; want the listing (the check above must be able to fail)", resp.StatusCode, body)
	}
}

func TestGateCachesAdmissions(t *testing.T) {
	t.Parallel()
	probes := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes++
		answer(w, r, `{}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	now := time.Unix(1000, 0)
	g := authgate.New(authgate.Options{Upstream: u, TTL: time.Minute, Now: func() time.Time { return now }})
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer a")
	msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage("1"), Method: "skills/list"}
	for i := range 3 {
		if !admit(g, httptest.NewRecorder(), r, msg) {
			t.Fatalf("Admit #%d = false", i)
		}
	}
	if probes != 1 {
		t.Errorf("probes after 3 admissions within the TTL = %d, want 1", probes)
	}
	r.Header.Set("Authorization", "Bearer b")
	admit(g, httptest.NewRecorder(), r, msg)
	now = now.Add(2 * time.Minute)
	r.Header.Set("Authorization", "Bearer a")
	admit(g, httptest.NewRecorder(), r, msg)
	if probes != 3 {
		t.Errorf("probes after a new credential and an expiry = %d, want 3", probes)
	}
}

func TestGateUpstreamDown(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(up.URL)
	up.Close()
	g := authgate.New(authgate.Options{Upstream: u})
	w := httptest.NewRecorder()
	if admit(g, w, httptest.NewRequest(http.MethodPost, "/mcp", nil), rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage(`"req-1"`), Method: "skills/list"}) {
		t.Fatal("Admit with the upstream down = true")
	}
	if w.Code != http.StatusBadGateway {
		t.Errorf("status with the upstream down = %d, want 502", w.Code)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type with the upstream down = %q, want application/json", ct)
	}
	var e struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Reason string `json:"reason"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("reply with the upstream down = %q, not a JSON-RPC error: %v", w.Body, err)
	}
	if string(e.ID) != `"req-1"` || e.Error.Code != reply.CodeInternalError || e.Error.Data.Reason != "upstream_unreachable" {
		t.Errorf("error with the upstream down = id %s, code %d, reason %q; want id \"req-1\", code %d, reason upstream_unreachable",
			e.ID, e.Error.Code, e.Error.Data.Reason, reply.CodeInternalError)
	}
}

// message returns the JSON-RPC message of a reply body: the body itself
// when it is JSON, else the data of its SSE event answering id 1.
func message(body string) []byte {
	if strings.HasPrefix(body, "{") {
		return []byte(body)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), "data: "); ok && strings.Contains(d, `"id":1`) {
			return []byte(d)
		}
	}
	return nil
}

// TestGateCustomCredentialHeader: with --auth-headers naming a header of the
// operator's choosing, the gate's probe carries that header and its cache is
// keyed by it, so an admitted key admits nobody else; agents/get's
// tools/list and the upstream-files overlay's reads carry it too.
func TestGateCustomCredentialHeader(t *testing.T) {
	t.Parallel()
	const key = "k-good"
	const challenge = `ApiKey realm="upstream"`
	requireKey := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Api-Key") != key {
				w.Header().Set("WWW-Authenticate", challenge)
				http.Error(w, "missing or wrong API key", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			u, _ := sidecar(t, requireKey(demo.Handler(&mcp.StreamableHTTPOptions{Stateless: era.stateless})),
				sidecarOptions{overlay: true, authHeaders: []string{"X-Api-Key"}})
			good := http.Header{"X-Api-Key": {key}}
			bad := http.Header{"X-Api-Key": {"k-wrong"}}
			if !era.stateless {
				good = legacySession(t, u, good)
				bad.Set("Mcp-Session-Id", good.Get("Mcp-Session-Id"))
			}
			for _, c := range calls() {
				// The key is admitted first, so a refusal below is not for
				// want of a cached admission.
				if resp, body := do(t, u, c, era.stateless, good); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
					t.Errorf("%s with the key = %d %s, want a result", c.method, resp.StatusCode, body)
				}
				for _, caller := range []struct {
					name string
					hdr  http.Header
				}{{"no key", http.Header{}}, {"wrong key", bad}, {"the key as a bearer token", http.Header{"Authorization": {"Bearer " + key}}}} {
					resp, body := do(t, u, c, era.stateless, caller.hdr)
					if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != challenge {
						t.Errorf("%s with %s = %d (WWW-Authenticate %q), want 401 with %q", c.method, caller.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), challenge)
					}
					if strings.Contains(body, "skill://") {
						t.Errorf("%s with %s leaked content: %s", c.method, caller.name, body)
					}
				}
			}
		})
	}
}

// TestGateResourcesListCursor: a resources/list page the sidecar answers
// itself, from its own cursor and without the upstream, is gated like
// skills/list.
func TestGateResourcesListCursor(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			// Two entries a page: the example plugin's files need several.
			u, _ := sidecar(t, bearer(demo.Handler(&mcp.StreamableHTTPOptions{Stateless: era.stateless}), map[string]string{token: ""}),
				sidecarOptions{pageSize: 2})
			good := http.Header{"Authorization": {"Bearer " + token}}
			bad := http.Header{"Authorization": {"Bearer wrong"}}
			if !era.stateless {
				good = legacySession(t, u, good)
				bad.Set("Mcp-Session-Id", good.Get("Mcp-Session-Id"))
			}
			_, body := do(t, u, call{"resources/list", `{}`}, era.stateless, good)
			var first struct {
				Result struct {
					NextCursor string `json:"nextCursor"`
				} `json:"result"`
			}
			// The upstream's last page carries the sidecar's first files and
			// a cursor of the sidecar's own: its prefix is what routes the
			// next page to the sidecar rather than the upstream.
			if err := json.Unmarshal(message(body), &first); err != nil || !strings.HasPrefix(first.Result.NextCursor, "skills-sidecar/") {
				t.Fatalf("first resources/list page = %s (%v), want a nextCursor of the sidecar's", body, err)
			}
			next := call{"resources/list", fmt.Sprintf(`{"cursor":%q}`, first.Result.NextCursor)}
			if resp, body := do(t, u, next, era.stateless, good); resp.StatusCode != http.StatusOK || !strings.Contains(body, "skill://") {
				t.Errorf("next page with the token = %d %s, want the sidecar's files", resp.StatusCode, body)
			}
			for _, caller := range []struct {
				name string
				hdr  http.Header
			}{{"no token", http.Header{}}, {"wrong token", bad}} {
				resp, body := do(t, u, next, era.stateless, caller.hdr)
				if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata") {
					t.Errorf("next page with %s = %d (WWW-Authenticate %q), want 401 with the upstream's WWW-Authenticate", caller.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
				}
				if strings.Contains(body, "skill://") {
					t.Errorf("next page with %s leaked content: %s", caller.name, body)
				}
			}
		})
	}
}

// admit asks g about msg and, as the proxy does, writes the refusal to w
// with msg's id; it reports whether g admitted the caller.
func admit(g *authgate.Gate, w http.ResponseWriter, r *http.Request, msg rewrite.Message) bool {
	err := g.Admit(r, msg)
	if err != nil {
		proxy.WriteReply(w, msg.ID, reply.Reply{Err: err})
	}
	return err == nil
}

// TestGateCallerLeftNoVerdict: a caller that leaves while the gate's probe
// is held at the upstream gets its request's own error, not
// ErrUnreachable (which would say the upstream is down), and the gate
// counts no verdict for it.
func TestGateCallerLeftNoVerdict(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read whole, so the server sees the client hang up
		arrived <- struct{}{}
		<-r.Context().Done() // the probe is held until the sidecar gives it up
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	reg := prometheus.NewRegistry()
	g := authgate.New(authgate.Options{Upstream: u, Metrics: metrics.New(reg, "test")})
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(ctx)
	done := make(chan error, 1)
	go func() {
		done <- g.Admit(req, rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage(`1`), Method: "skills/list"})
	}()
	<-arrived
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || errors.Is(err, onbehalf.ErrUnreachable) {
		t.Errorf("Admit for a caller that left = %v, want its context's error, not ErrUnreachable", err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if strings.HasSuffix(mf.GetName(), "auth_verdicts_total") {
			for _, m := range mf.GetMetric() {
				if v := m.GetCounter().GetValue(); v != 0 {
					t.Errorf("%s%v = %v after a caller left, want no verdict", mf.GetName(), m.GetLabel(), v)
				}
			}
		}
	}
}

// leaveAfter is a transport that sends the probe, then cancels the
// caller's request (leave) as the answer arrives, and answers with body,
// in which ID is the probe's own id.
type leaveAfter struct {
	leave func()
	body  string
}

func (l leaveAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	m, _ := rewrite.ParseMessage(b)
	l.leave()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(strings.ReplaceAll(l.body, "ID", string(m.ID)))), Request: r}, nil
}

// TestGateAnswerAsCallerLeaves: an answer that arrives just as the caller
// leaves is judged as any answer is: a JSON-RPC error admits nobody (only
// a result does), whether or not the caller is still there.
func TestGateAnswerAsCallerLeaves(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g := authgate.New(authgate.Options{Upstream: u, Client: &http.Client{Transport: leaveAfter{leave: cancel,
		body: `{"jsonrpc":"2.0","id":ID,"error":{"code":-32603,"message":"no"}}`}}})
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(ctx)
	if err := g.Admit(req, rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage(`1`), Method: "skills/list"}); err == nil {
		t.Error("Admit = nil for a JSON-RPC error answering the probe as the caller left, want no admission")
	}
}
