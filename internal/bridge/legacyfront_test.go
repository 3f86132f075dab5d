package bridge

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// frontFixture is a LegacyFront in front of the modern-only peer, served
// on loopback, with a clock the test moves.
type frontFixture struct {
	front  *LegacyFront
	server *mcp.Server
	url    string
	mu     sync.Mutex
	now    time.Time
}

func newFrontFixture(t *testing.T, max int) *frontFixture {
	t.Helper()
	return newFrontFixtureWith(t, max, func(h http.Handler) http.Handler { return h })
}

// newFrontFixtureWith is newFrontFixture with the upstream's handler
// wrapped, so a test can watch what reaches it. One caller's share of
// each table is all of it; each of opts edits the front before it starts.
func newFrontFixtureWith(t *testing.T, max int, wrap func(http.Handler) http.Handler, opts ...func(*LegacyFront)) *frontFixture {
	t.Helper()
	return newFrontFixtureShared(t, max, wrap, append([]func(*LegacyFront){func(f *LegacyFront) { f.SharePercent = 100 }}, opts...)...)
}

// newFrontFixtureShared is newFrontFixtureWith with the tables' shares
// left to opts (the default share unless one sets it). A request's
// X-Test-Peer header, when set, is its client address.
func newFrontFixtureShared(t *testing.T, max int, wrap func(http.Handler) http.Handler, opts ...func(*LegacyFront)) *frontFixture {
	t.Helper()
	fx := &frontFixture{server: modernonly.NewServer(), now: time.Unix(1e9, 0)}
	mux := http.NewServeMux()
	mux.Handle("/mcp", wrap(modernonly.Handler(fx.server)))
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	u, _ := http.NewRequest(http.MethodGet, up.URL+"/mcp", nil)
	fx.front = &LegacyFront{Next: http.DefaultTransport, Upstream: u.URL, MaxSessions: max, IdleTimeout: time.Hour,
		Eras: func() Eras { return Eras{Known: true, Modern: true, Versions: []string{ModernVersion}} }}
	fx.front.now = func() time.Time { fx.mu.Lock(); defer fx.mu.Unlock(); return fx.now }
	for _, o := range opts {
		o(fx.front)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fx.front.Start(ctx)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Scheme, r.URL.Host, r.RequestURI = "http", up.Listener.Addr().String(), ""
		if p := r.Header.Get("X-Test-Peer"); p != "" {
			r.RemoteAddr = p
			r.Header.Del("X-Test-Peer")
		}
		resp, err := roundTrip(fx.front, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.(http.Flusher).Flush()
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	fx.url = srv.URL + "/mcp"
	return fx
}

func (fx *frontFixture) advance(d time.Duration) {
	fx.mu.Lock()
	fx.now = fx.now.Add(d)
	fx.mu.Unlock()
}

func post(t *testing.T, u, body string, h map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp, b.String()
}

const legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestLegacyFrontSessionCap: minting holds nothing, so initialize is
// never refused for room; at most MaxSessions sessions hold state on the
// replica (here a log level), past it that state is refused (503,
// bridge_sessions_exhausted) rather than another session's ended, while
// the session's plain requests still work; DELETE and idle expiry free
// places. Each session has a caller of its own (its bearer token), so no
// caller's share is what refuses.
func TestLegacyFrontSessionCap(t *testing.T) {
	fx := newFrontFixtureWith(t, 2, func(h http.Handler) http.Handler { return h }, func(f *LegacyFront) { f.SharePercent = 100 })
	var sids []map[string]string
	for i := 0; i < 3; i++ {
		h := map[string]string{"Authorization": "Bearer caller-" + string(rune('a'+i))}
		resp, body := post(t, fx.url, legacyInit, h)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"protocolVersion":"2025-06-18"`) {
			t.Fatalf("initialize %d: %d %s", i, resp.StatusCode, body)
		}
		h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
		sids = append(sids, h)
	}
	if sids[0]["Mcp-Session-Id"] == sids[1]["Mcp-Session-Id"] || sids[0]["Mcp-Session-Id"] == "" {
		t.Fatalf("session ids %q: want distinct ids", sids)
	}
	if got := fx.front.Sessions(); got != 0 {
		t.Errorf("sessions holding state after three initializes = %d, want 0", got)
	}
	setLevel := `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`
	for _, h := range sids[:2] {
		if resp, body := post(t, fx.url, setLevel, h); resp.StatusCode != http.StatusOK {
			t.Fatalf("logging/setLevel: %d %s", resp.StatusCode, body)
		}
	}
	resp, body := post(t, fx.url, setLevel, sids[2])
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "bridge_sessions_exhausted") {
		t.Fatalf("logging/setLevel past the cap: %d %s", resp.StatusCode, body)
	}
	for _, h := range sids { // every session still works
		if resp, body := post(t, fx.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, h); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"add"`) {
			t.Errorf("tools/list in session %s: %d %s", h["Mcp-Session-Id"], resp.StatusCode, body)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, fx.url, nil)
	for k, v := range sids[0] {
		req.Header.Set(k, v)
	}
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", r, err)
	}
	if got := fx.front.Sessions(); got != 1 {
		t.Errorf("sessions holding state after DELETE = %d, want 1", got)
	}
	if resp, _ := post(t, fx.url, setLevel, sids[2]); resp.StatusCode != http.StatusOK {
		t.Errorf("logging/setLevel after DELETE: %d", resp.StatusCode)
	}
	fx.advance(2 * time.Hour)
	fx.front.sweep()
	if got := fx.front.Sessions(); got != 0 {
		t.Errorf("sessions holding state after the idle timeout = %d, want 0", got)
	}
}

// TestLegacyFrontGetStream: a legacy GET stream of a minted session is
// served from subscriptions/listen: a tool added upstream arrives as
// notifications/tools/list_changed, and the listen acknowledgement does
// not.
func TestLegacyFrontGetStream(t *testing.T) {
	fx := newFrontFixture(t, 4)
	resp, _ := post(t, fx.url, legacyInit, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fx.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	get, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %s", get.StatusCode, get.Header.Get("Content-Type"))
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(get.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The listen is opened once the GET is: add tools until one change
	// is seen (the first may come before the listen is registered).
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("GET stream ended before a notification")
			}
			if strings.Contains(l, "subscriptions/acknowledged") {
				t.Fatalf("the listen acknowledgement reached the legacy stream: %s", l)
			}
			if strings.Contains(l, `"notifications/tools/list_changed"`) {
				return
			}
		case <-tick.C:
			mcp.AddTool(fx.server, &mcp.Tool{Name: "late" + string(rune('a'+i%26))}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
		case <-ctx.Done():
			t.Fatal("no notifications/tools/list_changed on the GET stream")
		}
	}
}

func TestLegacyReply(t *testing.T) {
	for name, c := range map[string]struct{ method, in, want string }{
		"result untouched, extras and escapes kept": {"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","x":"a\u0026b"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","x":"a\u0026b"}}`},
		"input_required refused": {"tools/call", `{"jsonrpc":"2.0","id":"a","result":{"resultType":"input_required","inputRequests":{}}}`,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"the upstream asked the client for input (input_required), which the era bridge does not carry to legacy clients","data":{"reason":"input_required_not_bridged"}}}`},
		"input_required spelled with an escape refused": {"tools/call", `{"jsonrpc":"2.0","id":"a","result":{"resultType":"input\u005frequired"}}`,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"the upstream asked the client for input (input_required), which the era bridge does not carry to legacy clients","data":{"reason":"input_required_not_bridged"}}}`},
		"resource not found": {"resources/read", `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"x://y"}}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"data":{"uri":"x://y"},"message":"Resource not found"}}`},
		"invalid params elsewhere kept": {"tools/call", `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"not found"}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"not found"}}`},
		"header mismatch":     {"tools/list", `{"jsonrpc":"2.0","id":3,"error":{"code":-32020,"message":"m"}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"m"}}`},
		"missing capability":  {"tools/list", `{"jsonrpc":"2.0","id":3,"error":{"code":-32021,"message":"m"}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32003,"message":"m"}}`},
		"unsupported version": {"tools/list", `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"m"}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32004,"message":"m"}}`},
		"not json":            {"tools/list", `nope`, `nope`},
	} {
		t.Run(name, func(t *testing.T) {
			got, _ := LegacyReply(c.method, []byte(c.in))
			if diff := cmp.Diff(c.want, string(got)); diff != "" {
				t.Errorf("LegacyReply (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNegotiateLegacyAndHeaderValue(t *testing.T) {
	for in, want := range map[string]string{"2025-03-26": "2025-03-26", "2025-11-25": "2025-11-25", "2024-11-05": "2025-11-25", "": "2025-11-25", "2026-07-28": "2025-11-25"} {
		if got := NegotiateLegacy(in); got != want {
			t.Errorf("NegotiateLegacy(%q) = %q, want %q", in, got, want)
		}
	}
	// The encoded examples of the 2026-07-28 Streamable HTTP page's value
	// encoding: "Hello, 世界" and a leading space.
	for in, want := range map[string]string{"get_weather": "get_weather", "Hello, 世界": "=?base64?SGVsbG8sIOS4lueVjA==?=", " x": "=?base64?IHg=?=", "": "=?base64??="} {
		if got := wire.EncodeHeaderValue(in); got != want {
			t.Errorf("wire.EncodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzLegacyShapes(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`), []byte(`{"uri":"a","_meta":{"progressToken":1}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"data":{"uri":"a"}}}`), []byte(`null`))
	f.Add([]byte(`{"capabilities":{},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"n"}}}`), []byte(`{"_meta":null}`))
	f.Fuzz(func(t *testing.T, reply, params []byte) {
		LegacyReply("resources/read", reply)
		_, _ = InitializeFromDiscover(reply, "2025-11-25")
		if p, err := ModernParams(params, []byte("{}"), []byte(`{"name":"c","version":"1"}`), "info"); err == nil {
			if v, _ := rewriteGetVersion(p); v != ModernVersion {
				t.Fatalf("ModernParams(%q) = %s: no protocolVersion", params, p)
			}
		}
	})
}

func rewriteGetVersion(p []byte) (string, bool) {
	return rewrite.GetString(p, "_meta", metaProtocol)
}

// A modern JSON reply the legacy front turns into an error (a result that
// asks the client for input, which it does not carry) is an error to the
// legacy client: with status 200, as a legacy server answers one, though
// the upstream sent 400 or 404; any other status stays.
func TestFrontJSONReplyMadeAnErrorIs200(t *testing.T) {
	for status, want := range map[int]int{http.StatusBadRequest: http.StatusOK, http.StatusNotFound: http.StatusOK, http.StatusInternalServerError: http.StatusInternalServerError} {
		fx := newFrontFixtureWith(t, 0, func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Mcp-Method") != "tools/call" {
					next.ServeHTTP(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{}}}`)
			})
		})
		resp, _ := post(t, fx.url, legacyInit, nil)
		sid := resp.Header.Get("Mcp-Session-Id")
		resp, body := post(t, fx.url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
			map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"})
		if resp.StatusCode != want || !strings.Contains(body, `"input_required_not_bridged"`) {
			t.Errorf("upstream %d: reply %d %s, want %d with the error input_required_not_bridged", status, resp.StatusCode, body, want)
		}
	}
}
