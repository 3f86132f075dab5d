package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// writeListener records the writes made to each connection it accepts.
type writeListener struct {
	net.Listener
	mu     sync.Mutex
	writes []string // every write, in order, over all connections
}

func (l *writeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &writeConn{Conn: c, l: l}, nil
}

func (l *writeListener) taken() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.writes...)
}

// writeConn is a net.Conn with no raw socket to offer, so the server
// writes through it (package rawsock falls back to Write).
type writeConn struct {
	net.Conn
	l *writeListener
}

func (c *writeConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes = append(c.l.writes, string(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// sseOnce is an upstream that answers every POST with a whole SSE reply,
// chunked, its head, its one event and its last chunk in one write, as an
// MCP server's reply to a quick call arrives (the HTTP/1.1 framing written
// by hand from RFC 9112, section 7.1). With later, it writes the event and
// the last chunk apart, the second after the first has been relayed.
func sseOnce(t *testing.T, event string, later chan struct{}) string {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := fmt.Sprintf("%x\r\n%s\r\n", len(event), event)
	if later == nil {
		return rawReply(t, head+chunk+"0\r\n\r\n", "", nil, nil)
	}
	return rawReply(t, head+chunk, "0\r\n\r\n", later, nil)
}

// rawReply is an upstream that answers every request with the bytes
// first, then, once later is closed (nil: at once), rest, in another write,
// and sets wrote (when not nil) once it has.
func rawReply(t *testing.T, first, rest string, later chan struct{}, wrote *atomic.Bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					_, _ = io.WriteString(c, first)
					if later != nil {
						select {
						case <-later:
						case <-time.After(clientBound):
						}
					}
					if rest != "" {
						_, _ = io.WriteString(c, rest)
					}
					if wrote != nil {
						wrote.Store(true)
					}
				}
			}()
		}
	}()
	return "http://" + l.Addr().String() + "/mcp"
}

// ownServerWrites serves a proxy to upstream on the sidecar's own server over a
// listener that counts its writes.
func ownServerWrites(t *testing.T, upstream string) (string, *writeListener) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &writeListener{Listener: inner}
	serveOwn(t, newProxy(t, upstream, proxy.Options{}), l, 10*time.Second)
	return "http://" + inner.Addr().String() + "/mcp", l
}

// TestWholeSSEReplyLeavesInOneWrite: an SSE reply to a POST that arrived
// whole (head, event and end together) leaves for the client in one
// write, as a JSON reply does: the head does not go ahead of the event,
// nor the event ahead of the end. The client reads the event intact. So
// it is for a reply passed on as it came (tools/call) and for one read
// event by event to be edited (initialize, whose reply gets the
// declaration).
func TestWholeSSEReplyLeavesInOneWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, result string }{
		{"tools/call", `{"content":[]}`},
		{"initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"u","version":"1"}}`},
	} {
		ev := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":" + tc.result + "}\n\n"
		sidecar, l := ownServerWrites(t, sseOnce(t, ev, nil))
		resp := postCall(t, sidecar, tc.method)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != ev {
			t.Fatalf("%s: the client read %q, %v; want the event %q", tc.method, b, err, ev)
		}
		if w := l.taken(); len(w) != 1 {
			t.Errorf("%s: the reply left in %d writes %q, want 1", tc.method, len(w), w)
		}
	}
}

// TestSSEEventGoesBeforeALateEnd: when the end of the reply comes after
// its event, the event is sent while the relay waits for the end: merging
// writes never holds an event back.
func TestSSEEventGoesBeforeALateEnd(t *testing.T) {
	t.Parallel()
	ev := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"
	later := make(chan struct{})
	sidecar, _ := ownServerWrites(t, sseOnce(t, ev, later))
	resp := postCall(t, sidecar, "tools/call")
	defer resp.Body.Close()
	got := make([]byte, len(ev))
	if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != ev {
		t.Fatalf("before the end: the client read %q, %v; want the event %q", got, err, ev)
	}
	close(later)
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Errorf("after the event: %q, %v; want the clean end", rest, err)
	}
}

// postCall posts a request of method with id 1 to u and returns the SSE
// reply.
func postCall(t *testing.T, u, method string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"name":"echo"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c := &http.Client{Timeout: clientBound}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q; want 200 and the SSE reply", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp
}

// TestSealedSSEReplyLeavesInOneWrite: on the sealed-session path (a legacy
// caller in a session the sidecar minted, a modern-only go-sdk upstream
// behind the era bridge), the SSE reply to a call that arrived whole still
// leaves for the client in one write. (The upstream refuses a legacy call:
// the reply can only have come through the bridge.)
func TestSealedSSEReplyLeavesInOneWrite(t *testing.T) {
	t.Parallel()
	real := modernonly.Handler(modernonly.NewServer())
	up := sidecartest.Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") != "tools/call" {
			real.ServeHTTP(w, r)
			return
		}
		// The call's reply, whole, in one write (net/http's server sends
		// a short body with its length when the handler returns).
		body, _ := io.ReadAll(r.Body)
		id, _ := rewrite.GetKey(body, []string{"id"})
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(id)+
			",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: hi\"}],\"resultType\":\"complete\"}}\n\n")
	}))
	var l *writeListener
	s := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{Plugin: examples.Plugin(),
		Config: func(c *config.Config) {
			c.AnnotationsFile = ""
			c.SessionKeysFile = ""
		},
		Listener: func(inner net.Listener) net.Listener { l = &writeListener{Listener: inner}; return l },
	})
	sidecartest.WaitFor(t, time.Minute, func() bool { e := s.Eras.Current(); return e.Known && e.Label() == "modern" },
		"the sidecar to learn the upstream's eras modern")
	client := &http.Client{Timeout: clientBound}
	sid := mintSession(t, client, s.URL)
	before := len(l.taken())
	got := sealedCall{url: s.URL, version: "2025-11-25", session: sid,
		body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{}}}`}.do(t, client)
	if !strings.Contains(got, `"Echo: hi"`) {
		t.Fatalf("the reply %q is not echo's", got)
	}
	if w := l.taken()[before:]; len(w) != 1 {
		t.Errorf("the reply left in %d writes %q, want 1", len(w), w)
	}
}

// TestSSEEventNotHeldForFraming: a reply whose event has come with only
// part of the chunk framing after it (the CR of the chunk's CRLF) reaches
// the client before the rest of the framing comes: the relay does not
// wait on bytes that are not an event. So for a reply passed on as it came
// (tools/call: package hop's body) and for one read event by event to be
// edited (initialize's).
func TestSSEEventNotHeldForFraming(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, result string }{
		{"tools/call", `{"content":[]}`},
		{"initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"u","version":"1"}}`},
	} {
		ev := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":" + tc.result + "}\n\n"
		later := make(chan struct{})
		var wrote atomic.Bool
		head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
		sidecar, _ := ownServerWrites(t, rawReply(t, head+fmt.Sprintf("%x\r\n%s\r", len(ev), ev), "\n0\r\n\r\n", later, &wrote))
		resp := postCall(t, sidecar, tc.method)
		got := make([]byte, len(ev))
		// A relay that waited on the framing gets the event only when the
		// upstream's hang guard sends the rest: the read succeeds, late.
		_, err := io.ReadFull(resp.Body, got)
		if err != nil || string(got) != ev || wrote.Load() {
			t.Errorf("%s: the client read %q, %v (the upstream had sent the rest: %v); want the event before the rest", tc.method, got, err, wrote.Load())
		}
		close(later)
		resp.Body.Close()
	}
}

// TestUnannouncedTrailersReachTheClient: a whole SSE reply whose upstream
// sends a trailer it did not announce reaches the client with it, on
// either of the sidecar's HTTP servers: the reply goes chunked to carry it.
func TestUnannouncedTrailersReachTheClient(t *testing.T) {
	t.Parallel()
	ev := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	up := rawReply(t, head+fmt.Sprintf("%x\r\n%s\r\n0\r\nX-Sum: abc\r\n\r\n", len(ev), ev), "", nil, nil)
	own, _ := ownServerWrites(t, up)
	for _, u := range []string{own, newSidecar(t, up).URL + "/mcp"} {
		resp := postCall(t, u, "tools/call")
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != ev || resp.Trailer.Get("X-Sum") != "abc" {
			t.Errorf("%s: body %q, %v, trailer %v; want the event and X-Sum: abc", u, b, err, resp.Trailer)
		}
	}
}
