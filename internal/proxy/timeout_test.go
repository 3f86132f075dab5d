package proxy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// waitUntil polls cond (testwait.For); the bound only keeps a broken
// build from hanging.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, time.Minute, cond, what)
}

// dialSmall connects to the sidecar at u (an http:// URL) with a small
// receive buffer, so that a client that does not read blocks the sidecar
// soon.
func dialSmall(t *testing.T, u string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(strings.TrimSuffix(u, "/mcp"), "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByPeer drains c and reports whether the sidecar ended it (EOF or
// reset) rather than keeping it open past the bound. Only for replies
// small enough to drain: a connection closed with megabytes queued to a
// client with a tiny window drains at the pace of TCP's zero-window
// probes, so those tests watch the sidecar's side instead (tracked).
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, c)
	ne, ok := err.(net.Error)
	return !(ok && ne.Timeout())
}

// trackedSidecar is sidecarWith on a listener that counts the
// connections the sidecar has closed, hijacked (detached) ones included.
func trackedSidecar(t *testing.T, upstream string, opts proxy.Options) (string, *atomic.Int64) {
	t.Helper()
	srv := httptest.NewUnstartedServer(newProxy(t, upstream, opts))
	closed := &atomic.Int64{}
	srv.Listener = trackingListener{Listener: srv.Listener, closed: closed}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", closed
}

// newProxy is the proxy with opts in front of upstream.
func newProxy(t *testing.T, upstream string, opts proxy.Options) *proxy.Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	opts.Upstream = u
	p, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type trackingListener struct {
	net.Listener
	closed *atomic.Int64
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: c, closed: l.closed}, nil
}

type trackedConn struct {
	net.Conn
	closed *atomic.Int64
	once   sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.Conn.Close()
}

// TestStalledBodyGets408: a client that sends its head and part of its
// body, then nothing, gets 408 once ClientBodyTimeout passes between
// reads, and its connection ends; the upstream never sees the request.
// Before client-body-timeout the sidecar waited for the body for ever.
func TestStalledBodyGets408(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{})
	u := sidecarWith(t, up.URL+"/mcp", proxy.Options{ClientBodyTimeout: 200 * time.Millisecond})
	c := dialSmall(t, u)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no reply to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !bytes.Contains(b, []byte("stalled")) {
		t.Errorf("got %d %s, want 408", resp.StatusCode, b)
	}
	if !closedByPeer(c) {
		t.Error("the connection stayed open after the 408")
	}
	if n := up.Requests(); n != 0 {
		t.Errorf("upstream got %d requests, want 0", n)
	}
}

// TestRefusalBeforeTheBodyDoesNotWaitForIt: a request refused before its
// body is read (a foreign Host) whose client stalls mid-body gets its 403
// and loses its connection once ClientBodyTimeout passes; net/http's read
// to discard the body waited for ever before.
func TestRefusalBeforeTheBodyDoesNotWaitForIt(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{})
	u, closed := trackedSidecar(t, up.URL+"/mcp", proxy.Options{ClientBodyTimeout: 200 * time.Millisecond})
	c := dialSmall(t, u)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
	waitUntil(t, "the sidecar to close the connection", func() bool { return closed.Load() == 1 })
}

// TestSlowBodyWithinTheTimeoutPasses: the timeout is between reads, not
// on the whole body: a body sent in pieces, each within the timeout,
// spread over several times it, is forwarded.
func TestSlowBodyWithinTheTimeoutPasses(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{})
	// Pieces 300 ms apart against a 900 ms timeout: spread over 1.7 times
	// it. A machine stalled between two writes for longer than the
	// timeout (less the lazy delay a deadline may have been set early by)
	// could earn a 408 honestly; such an attempt is made again, and a
	// 408 with every piece on time fails.
	const timeout = 900 * time.Millisecond
	u := sidecarWith(t, up.URL+"/mcp", proxy.Options{ClientBodyTimeout: timeout})
	body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`
	for attempt := 1; ; attempt++ {
		c := dialSmall(t, u)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		last, widest := time.Now(), time.Duration(0)
		for i := 0; i < len(body); i += len(body) / 4 {
			time.Sleep(300 * time.Millisecond)
			widest = max(widest, time.Since(last))
			_, _ = io.WriteString(c, body[i:min(len(body), i+len(body)/4)])
			last = time.Now()
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.Close()
		if resp.StatusCode == http.StatusRequestTimeout && widest >= timeout-lazydeadline.Delay(timeout) && attempt < 3 {
			t.Logf("attempt %d: 408 after a gap of %v between pieces; again", attempt, widest)
			continue
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"id":4`)) {
			t.Errorf("got %d %s (widest gap between pieces %v), want the upstream's reply", resp.StatusCode, b, widest)
		}
		return
	}
}

// TestClientThatNeverReadsIsCut: a client that sends a request and reads
// nothing of the reply (a JSON reply far larger than the socket buffers,
// an endless SSE reply to a POST, an endless detached GET stream) has its
// connection closed once SendTimeout passes without a byte accepted, and
// the upstream side is released: its connection closed, its stream
// writer gone. Before send-timeout both stayed for ever. (The spares the
// transport dials ahead have carried nothing and stay open.)
func TestClientThatNeverReadsIsCut(t *testing.T) {
	t.Parallel()
	big := func(r *http.Request, b []byte) faultserver.Reply {
		return faultserver.Reply{Header: http.Header{"Content-Type": {"application/json"}},
			Body: append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":{"pad":"`), bytes.Repeat([]byte("x"), 64<<20)...), `"}}`...)}
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
	for _, tt := range []struct {
		name    string
		opts    faultserver.Options
		request string
	}{
		{"JSON reply", faultserver.Options{Reply: big},
			fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(call), call)},
		{"SSE reply", faultserver.Options{Mode: faultserver.Stream},
			fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(call), call)},
		{"detached GET stream", faultserver.Options{Mode: faultserver.Stream},
			"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := faultserver.Start(t, tt.opts)
			u, closed := trackedSidecar(t, up.URL+"/mcp", proxy.Options{SendTimeout: 300 * time.Millisecond})
			c := dialSmall(t, u)
			_, _ = io.WriteString(c, tt.request)
			waitUntil(t, "the upstream to take the request", func() bool { return up.Requests() == 1 })
			waitUntil(t, "the upstream side to be released", func() bool { return up.Active() == 0 && up.OpenUsed() == 0 })
			waitUntil(t, "the sidecar to close the client's connection", func() bool { return closed.Load() == 1 })
		})
	}
}

// bigLocal answers every request itself with a 64 MiB result, streamed
// (a reply.Body, as a large skill file is), and says when the writing of
// it has returned.
type bigLocal struct{ returned chan struct{} }

func (l bigLocal) ServeLocal(*http.Request, rewrite.Message) (reply.Reply, bool) {
	return reply.Reply{Body: bigBody(l)}, true
}

type bigBody bigLocal

func (bigBody) Len() int { return 2 + 2048*32<<10 }

func (b bigBody) Encode(w io.Writer) error {
	defer close(b.returned)
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	for range 2048 {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, `"`)
	return err
}

func (bigLocal) EditReply(*http.Request, rewrite.Message) func([]byte) []byte { return nil }

// TestSendTimeoutCoversTheSidecarsOwnAnswers: a reply the sidecar writes
// itself (a skill file, a listing) to a client that reads nothing is cut
// by SendTimeout too, and the handler writing it returns.
func TestSendTimeoutCoversTheSidecarsOwnAnswers(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{})
	local := bigLocal{returned: make(chan struct{})}
	u, closed := trackedSidecar(t, up.URL+"/mcp", proxy.Options{SendTimeout: 300 * time.Millisecond, Local: local})
	c := dialSmall(t, u)
	call := `{"jsonrpc":"2.0","id":1,"method":"skills/list"}`
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(call), call)
	waitUntil(t, "the handler to return", func() bool {
		select {
		case <-local.returned:
			return true
		default:
			return false
		}
	})
	waitUntil(t, "the sidecar to close the client's connection", func() bool { return closed.Load() == 1 })
}

// TestQuietStreamIsNotCut: SendTimeout times writes, not silence. An SSE
// reply that goes quiet for longer than it between events and again before
// it ends reaches the client whole and cleanly terminated (without the
// deadline renewed as the handler returns, net/http's last chunk failed:
// unexpected EOF); a second request after a pause longer than the timeout
// works too.
func TestQuietStreamIsNotCut(t *testing.T) {
	t.Parallel()
	const quiet = 600 * time.Millisecond
	u := sidecarWith(t, newQuietUpstream(t, quiet), proxy.Options{SendTimeout: 200 * time.Millisecond})
	// A write that waits for longer than SendTimeout fails honestly, and
	// a machine stalled for 200 ms at the wrong moment can make one wait
	// so: the pair of requests is tried up to three times, on a client
	// of its own each. A sidecar that cuts quiet streams fails every try.
	var failed []string
	for try := 1; try <= 3; try++ {
		if err := quietPair(u, quiet); err != nil {
			failed = append(failed, err.Error())
			t.Logf("try %d: %v", try, err)
			continue
		}
		return
	}
	t.Fatalf("every try failed: %s", strings.Join(failed, "; "))
}

// quietPair sends two requests to the quiet upstream behind u on one
// connection, quiet apart, and says what went wrong.
func quietPair(u string, quiet time.Duration) error {
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second}}
	defer client.CloseIdleConnections()
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Expect", "100-continue") // net/http writes the 100 itself
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Contains(b, []byte("second")) {
			return fmt.Errorf("request %d: body %q, error %v; want both events and a clean end", i, b, err)
		}
		time.Sleep(quiet) // longer than SendTimeout, between two requests on one connection
	}
	return nil
}

// newQuietUpstream answers with an SSE event, silence for quiet, a second
// event, silence again and the end of the stream.
func newQuietUpstream(t *testing.T, quiet time.Duration) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"first\"}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(quiet)
		_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"second\":true}}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(quiet) // and quiet again before the end of the stream
	}))
	t.Cleanup(up.Close)
	return up.URL + "/mcp"
}
