package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/h1"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// sidecarWith starts the proxy in front of the upstream at upstream with
// opts (Upstream and Declaration filled in) and returns its MCP URL.
func sidecarWith(t *testing.T, upstream string, opts proxy.Options) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	opts.Upstream, opts.Declaration = u, rewrite.SkillsSidecar()
	p, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestStreamOutlivesUpstreamTimeout: UpstreamTimeout bounds the wait for
// response headers only (long-lived streams are not cut by
// timeouts meant for short requests). An upstream that answers at once and
// then spreads its events over three times the timeout reaches the client
// whole, on a GET stream and on a POST's SSE reply alike; the same sidecar
// still answers 504 to an upstream whose headers come later than the
// timeout, so the timeout is in force.
func TestStreamOutlivesUpstreamTimeout(t *testing.T) {
	t.Parallel()
	const (
		// Wide enough that headers sent at once arrive within the
		// timeout on a stalled machine.
		timeout = 600 * time.Millisecond
		events  = 6
		gap     = 300 * time.Millisecond // events*gap = 3*timeout
	)
	event := func(i int) string {
		return fmt.Sprintf("id: %d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":%d}}\n\n", i, i)
	}
	var want strings.Builder
	for i := range events {
		want.WriteString(event(i))
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Test-Slow-Headers") != "" {
			select { // headers later than the timeout
			case <-time.After(3 * timeout):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i := range events {
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, event(i))
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(up.Close)
	u := sidecarWith(t, up.URL, proxy.Options{UpstreamTimeout: timeout})

	tests := []struct {
		name, method, body string
	}{
		{"GET stream", http.MethodGet, ""},
		{"POST reply", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`},
		{"POST handshake reply (parsed)", http.MethodPost, initReq},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var resp *http.Response
			// Headers the upstream sends at once can still miss the
			// timeout on a machine stalled for longer than it: a 504
			// (the head's timeout, not the stream's) is asked again, at
			// most twice. A stream cut by the timeout is a 200 cut short.
			for attempt := 1; ; attempt++ {
				req, _ := http.NewRequestWithContext(ctx, tt.method, u, strings.NewReader(tt.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				var err error
				if resp, err = http.DefaultClient.Do(req); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusGatewayTimeout || attempt == 3 {
					break
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Logf("attempt %d: %d %s; again", attempt, resp.StatusCode, b)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Errorf("stream ended with %v after %d bytes, want a clean end", err, len(got))
			}
			if resp.StatusCode != http.StatusOK || string(got) != want.String() {
				t.Errorf("%s through the sidecar: status %d, body\n%q\nwant 200 and every event\n%q", tt.method, resp.StatusCode, got, want.String())
			}
		})
	}
	t.Run("slow headers still time out", func(t *testing.T) {
		t.Parallel()
		resp, b := sidecartest.Post(t, u, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`,
			sidecartest.Header("X-Test-Slow-Headers", "1"))
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("headers after the timeout: status %d, body %q; want 504", resp.StatusCode, b)
		}
		if e := decodeErr(t, b); e.Error.Data["reason"] != "upstream_timeout" {
			t.Errorf("headers after the timeout: error %+v, want reason upstream_timeout", e)
		}
	})
}

// TestDELETEForwarded: a DELETE (ending a legacy session) reaches the
// upstream with its Mcp-Session-Id, and the upstream's answer, whatever it
// is, comes back as sent: status, headers and body.
func TestDELETEForwarded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
	}{
		{name: "session ended", status: http.StatusNoContent},
		{name: "stateless upstream", status: http.StatusMethodNotAllowed,
			header: map[string]string{"Allow": "POST", "Content-Type": "text/plain; charset=utf-8"}, body: "Method Not Allowed\n"},
		{name: "session gone", status: http.StatusNotFound,
			header: map[string]string{"Content-Type": "application/json"},
			body:   `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			type seen struct {
				method, session string
				bodyLen         int
			}
			got := make(chan seen, 1)
			u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- seen{r.Method, r.Header.Get("Mcp-Session-Id"), len(b)}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			req, _ := http.NewRequest(http.MethodDelete, u, nil)
			req.Header.Set("Mcp-Session-Id", "sess-42")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			select {
			case s := <-got:
				if want := (seen{http.MethodDelete, "sess-42", 0}); s != want {
					t.Errorf("upstream saw %+v, want %+v", s, want)
				}
			default:
				t.Fatal("the DELETE never reached the upstream")
			}
			if resp.StatusCode != tt.status || string(b) != tt.body {
				t.Errorf("client got %d %q, want the upstream's %d %q", resp.StatusCode, b, tt.status, tt.body)
			}
			for k, v := range tt.header {
				if g := resp.Header.Get(k); g != v {
					t.Errorf("client saw %s %q, want the upstream's %q", k, g, v)
				}
			}
		})
	}
}

// TestDELETEEndsGoSDKSession: with a go-sdk upstream, a DELETE through the
// sidecar ends the very session it names: the first gets 204, and the
// session is gone afterwards (404), as it would be directly.
func TestDELETEEndsGoSDKSession(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, upstreamMode{name: "stateful", stateful: true})
	u := newSidecar(t, up.URL).URL + "/mcp"
	resp, _ := sidecartest.Post(t, u, initReq, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("initialize through the sidecar returned no Mcp-Session-Id")
	}
	del := func() int {
		req, _ := http.NewRequest(http.MethodDelete, u, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := del(); got != http.StatusNoContent {
		t.Errorf("DELETE of a live session through the sidecar = %d, want 204", got)
	}
	if got := del(); got != http.StatusNotFound {
		t.Errorf("DELETE of the ended session through the sidecar = %d, want 404 (the first DELETE ended it)", got)
	}
}

// discoverReq is a server/discover request as the go-sdk v1.8.0 client
// sends it (headers and _meta).
const discoverReq = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`

// legacyRefusals are ways an upstream that knows only the legacy era turns
// down server/discover (docs/protocol.md §2: the client falls back to initialize
// on any reply that is not a recognised modern error).
var legacyRefusals = []struct {
	name, contentType, body string
	status                  int
}{
	{"unknown method, 404", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: server/discover"}}`, http.StatusNotFound},
	{"unknown method, 200", "application/json", `{"jsonrpc":"2.0", "id":1, "error":{"code":-32601,"message":"Method not found"}}` + "\n", http.StatusOK},
	{"not initialized", "application/json", `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`, http.StatusBadRequest},
	{"unknown method in SSE", "text/event-stream", "event: message\r\nid: 9\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\r\ndata: \"message\":\"Method not found\"}}\r\n\r\n", http.StatusOK},
	{"plain text", "text/plain; charset=utf-8", "Bad Request: Mcp-Session-Id header is required\n", http.StatusBadRequest},
}

// TestDiscoverRefusalPassesThrough: a legacy upstream's refusal of
// server/discover reaches the client exactly as sent (status, media type,
// every body byte), not rewritten into a result or another error, so the
// client sees what it would see directly and falls back to initialize.
func TestDiscoverRefusalPassesThrough(t *testing.T) {
	t.Parallel()
	for _, tt := range legacyRefusals {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			resp, got := sidecartest.Post(t, u, discoverReq, sidecartest.Header("Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover"))
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want the upstream's %d", resp.StatusCode, tt.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tt.contentType {
				t.Errorf("Content-Type = %q, want the upstream's %q", ct, tt.contentType)
			}
			if diff := cmp.Diff(tt.body, string(got)); diff != "" {
				t.Errorf("refusal body changed (-upstream +client):\n%s", diff)
			}
		})
	}
}

// TestLegacyUpstreamFallbackThroughSidecar: a go-sdk client in front of an
// upstream that refuses server/discover (a go-sdk server behind a filter
// answering it 404 -32601, as a legacy-only server does) falls back to
// initialize through the sidecar, and that handshake carries the
// declarations.
func TestLegacyUpstreamFallbackThroughSidecar(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sdk := upstreamHandler(upstreamMode{name: "stateful", stateful: true})
	refused := make(chan struct{}, 1)
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"server/discover"`)) {
			select {
			case refused <- struct{}{}:
			default:
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, legacyRefusals[0].body)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(legacy.Close)

	cs, _ := connect(t, ctx, newSidecar(t, legacy.URL).URL+"/mcp")
	select {
	case <-refused:
	default:
		t.Fatal("the client never asked server/discover; nothing was refused")
	}
	res := cs.InitializeResult()
	if res.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated version = %q, want the legacy 2025-11-25 after the refusal", res.ProtocolVersion)
	}
	for _, id := range []string{rewrite.SkillsExtensionID, rewrite.AgentsExtensionID} {
		if _, ok := res.Capabilities.Extensions[id]; !ok {
			t.Errorf("initialize result after the fallback lacks %s: %v", id, res.Capabilities.Extensions)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "legacy"}}); err != nil {
		t.Errorf("CallTool after the fallback = %v", err)
	}
}

// TestEachRequestCarriesOnlyItsOwnHeaders: the headers the upstream gets
// are the request's own (RFC 9110 §7.6: a proxy forwards a message's
// end-to-end fields), never a field of another request through the same
// sidecar, one after another or at once: the sidecar reuses what it
// builds requests from.
func TestEachRequestCarriesOnlyItsOwnHeaders(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		own := r.Header.Get("X-Caller")
		for k, vv := range r.Header {
			if strings.HasPrefix(k, "X-Only-") && (k != http.CanonicalHeaderKey("X-Only-"+own) || len(vv) != 1 || vv[0] != own) {
				t.Errorf("request of caller %q reached the upstream with %s: %q", own, k, vv)
			}
		}
		if r.Header.Get("X-Only-"+own) != own {
			t.Errorf("request of caller %q reached the upstream without its own header", own)
		}
		if own == "quiet" && r.Header.Get("Authorization") != "" {
			t.Errorf("a request without Authorization reached the upstream with %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(up.Close)
	side := sidecarWith(t, up.URL, proxy.Options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`
	call := func(caller string, auth bool) {
		req, err := http.NewRequest(http.MethodPost, side, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Caller", caller)
		req.Header.Set("X-Only-"+caller, caller)
		if auth {
			req.Header.Set("Authorization", "Bearer "+caller)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("caller %q: status %d", caller, resp.StatusCode)
		}
	}
	// One after another: a request with more headers, then one with fewer.
	for range 3 {
		call("loud", true)
		call("quiet", false)
	}
	// At once.
	done := make(chan struct{})
	for i := range 16 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 20 {
				call(fmt.Sprintf("c%d", i), i%2 == 0)
			}
		}()
	}
	for range 16 {
		<-done
	}
}

// TestEachReplyCarriesOnlyItsOwnHeaders: the headers a client gets are its
// reply's own, never a field of another reply through the same sidecar,
// one after another or at once, under the sidecar's server and under
// net/http's: the sidecar reuses what it reads replies into.
func TestEachReplyCarriesOnlyItsOwnHeaders(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		own := r.Header.Get("X-Caller")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Reply-"+own, own)
		if own == "loud" {
			for i := range 6 {
				w.Header().Add(fmt.Sprintf("X-Loud-%d", i), own)
			}
		}
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"caller":"`+own+`"}}`)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/mcp")
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar()})
	if err != nil {
		t.Fatal(err)
	}
	netSide := httptest.NewServer(p)
	t.Cleanup(netSide.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	own := &h1.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go own.Serve(l)
	t.Cleanup(func() { own.Close() })
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`
	for _, side := range []struct{ name, url string }{{"net/http", netSide.URL}, {"h1", "http://" + l.Addr().String()}} {
		t.Run(side.name, func(t *testing.T) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			t.Cleanup(client.CloseIdleConnections)
			call := func(caller string) {
				req, err := http.NewRequest(http.MethodPost, side.url, strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("X-Caller", caller)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"caller":"`+caller+`"`) {
					t.Errorf("caller %q: status %d, body %s", caller, resp.StatusCode, b)
				}
				loud := 0
				for k, vv := range resp.Header {
					switch {
					case strings.HasPrefix(k, "X-Loud-"):
						loud++
						if caller != "loud" || len(vv) != 1 || vv[0] != "loud" {
							t.Errorf("reply to caller %q has %s: %q", caller, k, vv)
						}
					case strings.HasPrefix(k, "X-Reply-") && (k != http.CanonicalHeaderKey("X-Reply-"+caller) || len(vv) != 1 || vv[0] != caller):
						t.Errorf("reply to caller %q has %s: %q", caller, k, vv)
					}
				}
				if resp.Header.Get("X-Reply-"+caller) != caller {
					t.Errorf("reply to caller %q came without its own header: %v", caller, resp.Header)
				}
				if caller == "loud" && loud != 6 {
					t.Errorf("reply to caller loud has %d of its 6 fields", loud)
				}
			}
			// One after another: a reply with more fields, then one with fewer.
			for range 3 {
				call("loud")
				call("quiet")
			}
			// At once.
			done := make(chan struct{})
			for i := range 16 {
				go func() {
					defer func() { done <- struct{}{} }()
					for j := range 20 {
						if (i+j)%5 == 0 {
							call("loud")
						} else {
							call(fmt.Sprintf("c%d", i))
						}
					}
				}()
			}
			for range 16 {
				<-done
			}
		})
	}
}

// TestLargeCallExpectingContinue: a call of a few MiB whose client asks
// "Expect: 100-continue" (as curl does for a large upload) passes to a Go
// upstream, which sends "100 Continue" when its handler first reads the
// body while the sidecar is still writing it: the interim reply does not
// stop the write, and the upstream's answer to the whole body comes back.
func TestLargeCallExpectingContinue(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"read":%d}}`, n)
	}))
	t.Cleanup(up.Close)
	u := sidecarWith(t, up.URL+"/mcp", proxy.Options{MaxBodyBytes: 8 << 20})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"pad":"` +
		strings.Repeat("x", 6<<20) + `"}}}`
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second}}
	defer client.CloseIdleConnections()
	for range 5 { // loopback's socket buffers sometimes take the whole body before the 100
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Expect", "100-continue")
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if want := fmt.Sprintf(`"read":%d`, len(body)); resp.StatusCode != http.StatusOK || !strings.Contains(string(got), want) {
			t.Fatalf("got %d %q, want 200 and the upstream's answer to the whole body (%s)", resp.StatusCode, got, want)
		}
	}
}
