package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

const testMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}`

// recorder wraps a real go-sdk legacy server and records, per initialize,
// the Authorization it came with.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	auth []string
	// who is, per initialize, the caller's identity headers it came with.
	who []string
	// forget, when set, makes the next POST with a session 404 once (an
	// upstream that restarted); not a GET, which the held session's
	// stream sends when it will, and which would take the 404 the test
	// means for its call.
	forget bool
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(strings.NewReader(string(b)))
	r.mu.Lock()
	if strings.Contains(string(b), `"method":"initialize"`) {
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.who = append(r.who, req.Header.Get("X-Forwarded-For")+" "+req.Header.Get("Traceparent")+" "+req.Header.Get("User-Agent"))
	} else if r.forget && req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") != "" {
		r.forget = false
		r.mu.Unlock()
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	r.mu.Unlock()
	r.next.ServeHTTP(w, req)
}

func (r *recorder) inits() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// newBridge is a bridge before h, holding at most max sessions; each of
// opts edits the Transport before it starts.
func newBridge(t *testing.T, h http.Handler, max int, opts ...func(*Transport)) (*Transport, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	bt := &Transport{Next: srv.Client().Transport, Credentials: []string{"Authorization"}, MaxSessions: max,
		Eras: func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} }}
	for _, o := range opts {
		o(bt)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bt.Start(ctx)
	return bt, srv.URL
}

func call(t *testing.T, bt *Transport, u, auth, caps, method string, kv ...string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"%s","params":{`+testMeta+`}}`, method, caps)
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := roundTrip(bt, req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// One session per authorization context and capability set, never shared:
// two tokens get two initializes (each with its own token), the same token
// again reuses its session, other capabilities get another.
func TestSessionsPerAuthorizationContext(t *testing.T) {
	rec := &recorder{next: demo.Handler(nil)}
	bt, u := newBridge(t, rec, 0)
	for _, c := range []struct{ auth, caps string }{
		{"Bearer a", "{}"}, {"Bearer b", "{}"}, {"Bearer a", "{}"}, {"Bearer a", `{"sampling":{}}`}, {"Bearer a", "{ }"},
	} {
		if code, body := call(t, bt, u, c.auth, c.caps, "tools/list"); code != 200 || !strings.Contains(body, `"resultType":"complete"`) {
			t.Fatalf("%v: %d %s", c, code, body)
		}
	}
	want := []string{"Bearer a", "Bearer b", "Bearer a"}
	if got := rec.inits(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("initialize sent with %q, want %q", got, want)
	}
	if n := bt.h.len(); n != 3 {
		t.Errorf("%d sessions held, want 3", n)
	}
}

// The session the bridge opens for a caller is opened as the caller's: its
// initialize carries the network identity the proxy set on the caller's
// request (X-Forwarded-For), its trace and user agent, as the gate's probe
// does; two client addresses with the same credentials get a session each.
func TestSessionsPerClientAddress(t *testing.T) {
	rec := &recorder{next: demo.Handler(nil)}
	bt, u := newBridge(t, rec, 0)
	for _, xff := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.1"} {
		if code, body := call(t, bt, u, "Bearer a", "{}", "tools/list", "X-Forwarded-For", xff,
			"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "User-Agent", "host/1"); code != 200 {
			t.Fatalf("%s: %d %s", xff, code, body)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []string{"192.0.2.1 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 host/1",
		"192.0.2.2 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 host/1"}
	if strings.Join(rec.who, "|") != strings.Join(want, "|") {
		t.Errorf("initialize sent as %q, want %q (one per address, each as its caller)", rec.who, want)
	}
}

// A 404 (the upstream forgot the session) opens a new one and retries.
func TestSessionReopenedOn404(t *testing.T) {
	rec := &recorder{next: demo.Handler(nil)}
	bt, u := newBridge(t, rec, 0)
	call(t, bt, u, "", "{}", "tools/list")
	rec.mu.Lock()
	rec.forget = true
	rec.mu.Unlock()
	if code, body := call(t, bt, u, "", "{}", "tools/list"); code != 200 || !strings.Contains(body, `"tools"`) {
		t.Fatalf("after 404: %d %s", code, body)
	}
	if n := len(rec.inits()); n != 2 {
		t.Errorf("%d initializes, want 2 (the first session, then its replacement)", n)
	}
}

// The cap holds: past it the least recently used session is closed.
func TestSessionCap(t *testing.T) {
	rec := &recorder{next: demo.Handler(nil)}
	bt, u := newBridge(t, rec, 2)
	for i := range 5 {
		call(t, bt, u, fmt.Sprintf("Bearer %d", i), "{}", "tools/list")
		if n := bt.h.len(); n > 2 {
			t.Fatalf("%d sessions held, cap 2", n)
		}
	}
}

// Idle sessions are swept, once idle past the timeout and not before.
// The clock is the Transport's before it starts (its sweeper reads it).
func TestIdleSessionsSwept(t *testing.T) {
	rec := &recorder{next: demo.Handler(nil)}
	var mu sync.Mutex
	now := time.Now()
	clock := func(d time.Duration) time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
		return now
	}
	bt, u := newBridge(t, rec, 0, func(bt *Transport) { bt.now = func() time.Time { return clock(0) } })
	if code, body := call(t, bt, u, "", "{}", "tools/list"); code != 200 {
		t.Fatalf("tools/list: %d %s", code, body)
	}
	if n := bt.h.len(); n != 1 {
		t.Fatalf("%d sessions held after a call, want 1", n)
	}
	clock(DefaultIdleTimeout - time.Second)
	bt.h.sweep()
	if n := bt.h.len(); n != 1 {
		t.Errorf("%d sessions a second before the idle timeout, want 1", n)
	}
	clock(2 * time.Second)
	bt.h.sweep()
	if n := bt.h.len(); n != 0 {
		t.Errorf("%d sessions after the idle timeout, want 0", n)
	}
}

// A request the bridge does not translate (legacy, or any while the
// upstream speaks 2026-07-28) reaches Next exactly as it came.
func TestPassThroughUntouched(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		_, _ = io.WriteString(w, "raw reply")
	}))
	defer srv.Close()
	eras := Eras{Known: true, Legacy: true, Modern: true}
	bt := &Transport{Next: srv.Client().Transport, Eras: func() Eras { return eras }}
	bt.Start(context.Background())
	modern := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + fmt.Sprintf(testMeta, "{}") + `}}`
	legacy := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, c := range []struct {
		eras Eras
		body string
	}{{eras, modern}, {Eras{Known: true, Legacy: true}, legacy}, {Eras{}, modern}} {
		eras = c.eras
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(c.body))
		resp, err := roundTrip(bt, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "raw reply" || got[len(got)-1] != c.body {
			t.Errorf("eras %s: sent %q, got %q", c.eras.Label(), got[len(got)-1], b)
		}
	}
}

// BenchmarkHeldSessionMemory reports the heap each held session costs the
// sidecar. The upstream is a stateless stand-in (it mints session ids and
// keeps nothing), so the upstream's own per-session state, which would
// share this process's heap, is not counted; it offers no GET stream, so
// neither is the stream a session holds where one is offered (watch).
func BenchmarkHeldSessionMemory(b *testing.B) {
	var next int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"initialize"`) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		mu.Lock()
		next++
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("session-%026d", next))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, initReply(body, `{"protocolVersion":"2025-11-25",`+
			`"capabilities":{"tools":{"listChanged":true},"resources":{"listChanged":true},"logging":{}},"serverInfo":{"name":"up","version":"1.0.0"}}`))
	}))
	defer srv.Close()
	const n = 2000
	client := srv.Client().Transport
	eras := func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} }
	var kept []*Transport
	for range b.N {
		bt := &Transport{Next: client, Credentials: []string{"Authorization"}, MaxSessions: n, Eras: eras}
		// Never stopped: a stopped holder's DELETEs would run during the
		// next measurement. Each transport is kept until the end.
		bt.Start(context.Background())
		kept = append(kept, bt)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
				`"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"}}}}`
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
			req.Header.Set("Authorization", fmt.Sprintf("Bearer token-%060d", i))
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "server/discover")
			resp, err := roundTrip(bt, req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if bt.h.len() != n {
			b.Fatalf("%d sessions held, want %d", bt.h.len(), n)
		}
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/session")
	}
	runtime.KeepAlive(kept)
}

// Headers that disagree with the body are refused as a modern server must
// (-32020, HTTP 400), not forwarded to the legacy upstream, which would
// not check them.
func TestHeaderMismatchRefused(t *testing.T) {
	rec := &recorder{next: demo.Handler(nil)}
	bt, u := newBridge(t, rec, 0)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},` + fmt.Sprintf(testMeta, "{}") + `}}`
	for hdr, val := range map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": "other", "Mcp-Protocol-Version": "2025-11-25"} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(hdr, val)
		resp, err := roundTrip(bt, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"code":-32020`) {
			t.Errorf("%s: %s: %d %s, want 400 -32020", hdr, val, resp.StatusCode, b)
		}
	}
	if n := len(rec.inits()); n != 0 {
		t.Errorf("%d sessions opened for refused requests", n)
	}
}

// A method the 2026-07-28 wire does not define travels back as HTTP 404
// with -32601 (SEP-2575), however the legacy upstream refused it: go-sdk's
// plain-text 400, or a JSON-RPC error on an SSE stream that opens with the
// empty priming event a resumable 2025-11-25 server sends first.
func TestUnknownMethodIs404(t *testing.T) {
	bt, u := newBridge(t, &recorder{next: demo.Handler(nil)}, 0)
	if code, body := call(t, bt, u, "", "{}", "unknown/method"); code != 404 || !strings.Contains(body, `"code":-32601`) {
		t.Errorf("go-sdk upstream: %d %s, want 404 -32601", code, body)
	}
	sse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"initialize"`) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			fmt.Fprint(w, initReply(b, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"up","version":"1"}}`))
			return
		}
		if !strings.Contains(string(b), `"id"`) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var in struct{ ID json.RawMessage }
		_ = json.Unmarshal(b, &in) // the error answers the request's id, whatever the bridge made it
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: 0\ndata: \n\n: keep-alive\n\nid: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n\n", in.ID)
	})
	bt, u = newBridge(t, sse, 0)
	if code, body := call(t, bt, u, "", "{}", "unknown/method"); code != 404 || !strings.Contains(body, `"code":-32601`) {
		t.Errorf("SSE upstream: %d %s, want 404 -32601", code, body)
	}
	// A method the wire defines keeps its stream and its 200, but not
	// the priming event: its id is the held session's (sealed_test.go).
	if code, body := call(t, bt, u, "", "{}", "tools/list"); code != 200 || strings.Contains(body, "id: ") || !strings.Contains(body, ": keep-alive") || !strings.Contains(body, `"code":-32601`) {
		t.Errorf("SSE upstream, tools/list: %d %q, want the stream kept, without the held session's event ids", code, body)
	}
}

// initReply is a legacy server's answer to the initialize in body, with
// result and the initialize's own id.
func initReply(body []byte, result string) string {
	m, _ := rewrite.ParseMessage(body)
	return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`
}
