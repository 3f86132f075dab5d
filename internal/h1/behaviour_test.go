package h1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Behaviour net/http's server gave the proxy that a byte-for-byte
// comparison cannot show: timing, the client going away, the connection's
// fate. The expectations are RFC 9112's and net/http's documented ones.

func TestExpectContinueSentAtFirstRead(t *testing.T) {
	_, addr, _ := start(t, echo())
	c, br := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if blank, _ := br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("after 100 Continue: %q", blank)
	}
	io.WriteString(c, "hello")
	resp, body := readReply(t, br, "POST")
	if resp.StatusCode != 200 || body != "hello" {
		t.Fatalf("status %d, body %q", resp.StatusCode, body)
	}
}

func TestExpectContinueUnreadClosesAfterReply(t *testing.T) {
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	resp, _ := readReply(t, br, "POST")
	if resp.StatusCode != http.StatusForbidden || !resp.Close {
		t.Fatalf("status %d (want the handler's 403, no 100 first), close %v", resp.StatusCode, resp.Close)
	}
	if !closedAfter(t, c, br) {
		t.Fatal("connection left open with a body the client may still send")
	}
}

// writeCounter counts the writes on the connections of a listener.
type writeCounter struct {
	net.Listener
	writes atomic.Int64
}

func (l *writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: &l.writes}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// serveOn serves s on l until the test ends.
func serveOn(t *testing.T, s *Server, l net.Listener) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
}

func TestCompleteReplyIsOneWrite(t *testing.T) {
	for _, size := range []int{0, 1500, maxBuffered} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		wc := &writeCounter{Listener: l}
		body := strings.Repeat("x", size)
		serveOn(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body[:size/2]))
			w.Write([]byte(body[size/2:]))
		}), ErrorLog: discardLog()}, wc)
		resp, got := roundTrip(t, l.Addr().String(), "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}", "POST")
		if got != body || resp.ContentLength != int64(size) {
			t.Fatalf("size %d: body of %d, length %d", size, len(got), resp.ContentLength)
		}
		if n := wc.writes.Load(); n != 1 {
			t.Errorf("size %d: %d writes for a complete reply, want 1", size, n)
		}
	}
}

func TestFlushSendsHeadAndBufferedBytesAtOnce(t *testing.T) {
	release := make(chan struct{})
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "event one\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "event two\n")
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("a streamed reply framed %v", resp.TransferEncoding)
	}
	first := make([]byte, len("event one\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "event one\n" {
		t.Fatalf("first event %q, %v (before the handler went on)", first, err)
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "event two\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// waitCtx is a handler that waits for its request's context to end, or
// goneWait, and reports which on gone.
func waitCtx(gone chan<- bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			gone <- true
		case <-time.After(goneWait):
			gone <- false
		}
		io.WriteString(w, "late")
	}
}

func TestClientGoneCancelsASlowRequest(t *testing.T) {
	gone := make(chan bool, 1)
	_, addr, _ := start(t, waitCtx(gone))
	c, _ := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	time.Sleep(2 * watchDelay)
	c.Close()
	if !<-gone {
		t.Fatal("the request's context was not canceled when the client left")
	}
}

func TestClientGoneCancelsAStream(t *testing.T) {
	gone := make(chan bool, 1)
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			gone <- true
		case <-time.After(goneWait):
			gone <- false
		}
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !<-gone {
		t.Fatal("the stream's context was not canceled when the client left")
	}
}

// A client that half-closes after its request still gets the reply of a
// fast handler; a handler still running after the watcher's delay sees
// its context canceled (as under net/http) and the connection closes
// after its reply, which is still written.
func TestHalfClosedClient(t *testing.T) {
	_, addr, _ := start(t, echo())
	c, br := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	c.(*net.TCPConn).CloseWrite()
	resp, body := readReply(t, br, "POST")
	if resp.StatusCode != 200 || body != "{}" {
		t.Fatalf("status %d, body %q", resp.StatusCode, body)
	}
	if !closedAfter(t, c, br) {
		t.Fatal("connection not closed after the half-closed client's reply")
	}

	gone := make(chan bool, 1)
	_, addr, _ = start(t, waitCtx(gone))
	c, br = dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	c.(*net.TCPConn).CloseWrite()
	if !<-gone {
		t.Fatal("a slow handler's context not canceled for a half-closed client")
	}
	resp, body = readReply(t, br, "POST")
	if body != "late" || !closedAfter(t, c, br) {
		t.Fatalf("reply %q, then open", body)
	}
}

// A fast request arms no watcher: its context ends only when the handler
// returns, and pipelined bytes are not taken from the next request.
func TestFastRequestNotWatched(t *testing.T) {
	var canceled atomic.Int64
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Err() != nil {
			canceled.Add(1)
		}
		io.WriteString(w, r.URL.Path)
	}))
	c, br := dial(t, addr)
	for i := range 50 {
		io.WriteString(c, "GET /"+itoa(i)+" HTTP/1.1\r\nHost: a\r\n\r\n")
		if _, body := readReply(t, br, "GET"); body != "/"+itoa(i) {
			t.Fatalf("reply %d: %q", i, body)
		}
	}
	if canceled.Load() != 0 {
		t.Fatal("a context canceled while its handler ran")
	}
}

// fastOrSlow answers /fast at once; any other request reads its body and
// waits for its context to end, then sends when it ended on canceled (the
// zero time after goneWait: not canceled). The tests measure from before
// the client wrote the request, a moment no later than the server's own
// start of it, so a stall of the handler's goroutine or of the machine can
// only lengthen what they measure, never shorten it below watchDelay.
func fastOrSlow(canceled chan<- time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fast" {
			io.WriteString(w, "fast")
			return
		}
		io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			canceled <- time.Now()
		case <-time.After(goneWait):
			canceled <- time.Time{}
		}
	})
}

// TestWatchDelayCountsFromEachRequest: the watch timer is left running
// between requests, but a request is watched once it has run for
// watchDelay, never sooner because requests before it on the connection
// started the timer; and then it is watched: its client leaving cancels
// it.
func TestWatchDelayCountsFromEachRequest(t *testing.T) {
	canceled := make(chan time.Time, 1)
	_, addr, _ := start(t, fastOrSlow(canceled))
	c, br := dial(t, addr)
	// Fast requests for a while, less than watchDelay: the timer the
	// first one started is due in the middle of the slow one.
	for first := time.Now(); time.Since(first) < watchDelay*2/5; {
		io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
		readReply(t, br, "GET")
	}
	sent := time.Now()
	io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	c.Close()
	// Watched from the first fast request's timer, it would be canceled
	// at most three fifths of watchDelay after it began (plus whatever the
	// machine's stalls add); watched from its own start, no sooner than
	// watchDelay after sent. Four fifths tells the two apart.
	at := <-canceled
	switch d := at.Sub(sent); {
	case at.IsZero():
		t.Fatal("a slow request after fast ones was not canceled when its client left")
	case d < watchDelay*4/5:
		t.Fatalf("the slow request was watched after %v, before it had run for %v", d, watchDelay)
	}
}

// A slow request's watcher takes the first byte of a pipelined request;
// it must reach the next head.
func TestWatcherKeepsPipelinedByte(t *testing.T) {
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(4 * watchDelay)
		}
		io.WriteString(w, r.URL.Path)
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(2 * watchDelay)
	io.WriteString(c, "GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := readReply(t, br, "GET"); body != "/slow" {
		t.Fatalf("first reply %q", body)
	}
	if _, body := readReply(t, br, "GET"); body != "/next" {
		t.Fatalf("second reply %q", body)
	}
}

// A head that trickles in, a line every 50 ms, is cut by ReadHeaderTimeout
// (200 ms) counted from its start: the connection closes while the client
// is still sending. A server that timed each read instead never closes it
// (and its IdleTimeout is slowTimeout); hangGuard of trickling is the
// guard, not a measure: a loaded machine's stretched sleeps and late
// timer cannot pass it.
func TestSlowlorisHeadTimesOut(t *testing.T) {
	_, addr, _ := start(t, echo(), func(s *Server) { s.ReadHeaderTimeout, s.IdleTimeout = 200*time.Millisecond, slowTimeout })
	c, br := dial(t, addr)
	c.SetDeadline(time.Now().Add(hangGuard + 10*time.Second))
	ended := make(chan error, 1)
	go func() {
		b, err := br.ReadByte()
		if err == nil {
			err = fmt.Errorf("the server answered (%q) a head that never ended", b)
		}
		ended <- err
	}()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n")
	begun := time.Now()
	for i := 0; ; i++ {
		select {
		case err := <-ended:
			if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("connection not closed: %v", err)
			}
			t.Logf("closed after %v of trickling", time.Since(begun))
			return
		case <-time.After(50 * time.Millisecond):
		}
		if d := time.Since(begun); d > hangGuard {
			t.Fatalf("a head trickling in for %v was not cut by a ReadHeaderTimeout of 200ms", d)
		}
		fmt.Fprintf(c, "X-%d: %d\r\n", i, i) // fails once the server has closed
	}
}

// A kept-alive connection idle for IdleTimeout (200 ms) is closed, not
// before (load only makes the close later, so the lower bound holds); the
// server's ReadHeaderTimeout is slowTimeout, so a server that timed the
// idle wait by it (or not at all) keeps the connection past hangGuard.
func TestIdleConnectionClosed(t *testing.T) {
	_, addr, _ := start(t, echo(), func(s *Server) { s.IdleTimeout, s.ReadHeaderTimeout = 200*time.Millisecond, slowTimeout })
	c, br := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readReply(t, br, "GET")
	begun := time.Now()
	c.SetReadDeadline(time.Now().Add(hangGuard))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection after %v: %v", time.Since(begun), err)
	}
	if d := time.Since(begun); d < 150*time.Millisecond {
		t.Fatalf("idle connection closed after %v, before its IdleTimeout of 200ms", d)
	}
}

func TestHeadOverLimitGets431(t *testing.T) {
	_, addr, _ := start(t, echo())
	head := "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 16<<10) + "\r\n\r\n"
	resp, _ := roundTrip(t, addr, head, "GET")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// Under the limit but over the first buffer: served.
	head = "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 6<<10) + "\r\n\r\n"
	if resp, _ := roundTrip(t, addr, head, "GET"); resp.StatusCode != 200 {
		t.Fatalf("a 6 KiB head: status %d", resp.StatusCode)
	}
}

// headOf is a GET head for target of exactly n bytes (n >= 64), padded
// by a field.
func headOf(target string, n int) string {
	h := "GET " + target + " HTTP/1.1\r\nHost: a\r\nX-Pad: "
	return h + strings.Repeat("p", n-len(h)-4) + "\r\n\r\n"
}

// TestPipelinedHeadOverLimitGets431: with max-header-bytes under the read
// buffer's 4 KiB, a head that arrived with the request before it (already
// buffered when its turn comes, read with that request's body) is held to
// the limit as one that arrives alone: exactly the limit is served, a byte more gets 431 after the
// requests before it are answered, and a request line longer than the
// limit gets 414. What follows a head in the buffer (a third request) does
// not count toward it.
func TestPipelinedHeadOverLimitGets431(t *testing.T) {
	const limit = 1024
	_, addr, _ := start(t, echo(), func(s *Server) { s.MaxHeaderBytes = limit })
	// The first request's body is read past the limit's first kilobyte,
	// so its reads fill the buffer with what follows it.
	first := "POST /first HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n" + strings.Repeat("b", 2000)
	for _, tc := range []struct {
		name, second string
		status       int // the second request's
		third        bool
	}{
		{"at the limit", headOf("/second", limit), 200, true},
		{"a byte over", headOf("/second", limit+1), 431, false},
		{"well over", headOf("/second", 3*limit), 431, false},
		{"small, before a long third", headOf("/second", 100), 200, true},
		{"long request line", headOf("/"+strings.Repeat("u", limit), 2*limit), 414, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			third := ""
			if tc.third {
				third = headOf("/third", 2*limit)
			}
			c, br := dial(t, addr)
			if _, err := io.WriteString(c, first+tc.second+third); err != nil { // one write: all of it buffered at the first read
				t.Fatal(err)
			}
			if resp, _ := readReply(t, br, "POST"); resp.StatusCode != 200 || resp.Header.Get("X-Uri") != "/first" {
				t.Fatalf("first: status %d for %q, want 200 for /first", resp.StatusCode, resp.Header.Get("X-Uri"))
			}
			resp, _ := readReply(t, br, "GET")
			if resp.StatusCode != tc.status {
				t.Fatalf("second head of %d bytes (limit %d): status %d, want %d", len(tc.second), limit, resp.StatusCode, tc.status)
			}
			if tc.status == 200 && resp.Header.Get("X-Uri") != "/second" {
				t.Fatalf("second: reply for %q", resp.Header.Get("X-Uri"))
			}
			if tc.third {
				if resp, _ := readReply(t, br, "GET"); resp.StatusCode != 431 {
					t.Fatalf("third head of %d bytes (limit %d): status %d, want 431", len(third), limit, resp.StatusCode)
				}
			}
		})
	}
}

// TestOverLimitHeadSameVerdictWherever: a head whose end lies beyond
// max-header-bytes gets 431 (RFC 6585, section 5), or 414 if its request
// line alone does (RFC 9112, section 3), whatever the bytes within the
// limit would make of it (a field line without a colon, a NUL or a bare CR
// in a value, obs-fold, bare LF line ends, no Host): net/http's server
// answers 431 when its limited read of a head ends before the head does,
// malformed or not. Only a request line refused as it stands, whole
// within the limit, gets 400, as net/http's reader fails on it before
// reading on. The verdict is the same wherever the head sits: first on
// its connection (read within the limit), behind a GET (buffered within
// that head's limit), or behind a POST whose body's reads buffered the
// whole of it, past the limit (with max-header-bytes under the read
// buffer's 4 KiB).
func TestOverLimitHeadSameVerdictWherever(t *testing.T) {
	pad := func(pre, post string, n int) string {
		return pre + strings.Repeat("p", max(n-len(pre)-len(post), 0)) + post
	}
	heads := []struct {
		name   string
		head   func(n int) string // a head of about n bytes, its end beyond n-1
		status int
	}{
		{"well-formed", func(n int) string { return pad("GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: ", "\r\n\r\n", n) }, 431},
		{"field line without colon", func(n int) string { return pad("GET /x HTTP/1.1\r\nHost: a\r\nX-Pad", "\r\n\r\n", n) }, 431},
		{"nul in an early value", func(n int) string { return pad("GET /x HTTP/1.1\r\nHost: a\r\nX: \x00\r\nX-Pad: ", "\r\n\r\n", n) }, 431},
		{"bare cr in the last value", func(n int) string { return pad("GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: ", "\rz\r\n\r\n", n) }, 431},
		{"space before a colon", func(n int) string { return pad("GET /x HTTP/1.1\r\nHost: a\r\nX : 1\r\nX-Pad: ", "\r\n\r\n", n) }, 431},
		{"obs-fold", func(n int) string { return pad("GET /x HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\nX-Pad: ", "\r\n\r\n", n) }, 431},
		{"bare lf", func(n int) string { return pad("GET /x HTTP/1.1\nHost: a\nX-Pad: ", "\n\n", n) }, 431},
		{"no host", func(n int) string { return pad("GET /x HTTP/1.1\r\nX-Pad: ", "\r\n\r\n", n) }, 431},
		{"request line too long", func(n int) string { return pad("GET /", " HTTP/1.1\r\nHost: a\r\n\r\n", n+30) }, 414},
		{"request line refused", func(n int) string { return pad("GET / HTTP/1.1 x\r\nHost: a\r\nX-Pad: ", "\r\n\r\n", n) }, 400},
	}
	for _, limit := range []int{1024, 8 << 10} {
		_, addr, _ := start(t, echo(), func(s *Server) { s.MaxHeaderBytes = limit })
		// limit+1 and limit+500 lie whole in the buffer behind the POST
		// when the limit is 1 KiB; 3*limit does not.
		for _, n := range []int{limit + 1, limit + 500, 3 * limit} {
			for _, h := range heads {
				for _, before := range []struct{ name, raw, method string }{
					{"first", "", ""},
					{"behind a GET", "GET /first HTTP/1.1\r\nHost: a\r\n\r\n", "GET"},
					{"behind a POST", "POST /first HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n" + strings.Repeat("b", 2000), "POST"},
				} {
					head := h.head(n)
					c, br := dial(t, addr)
					if _, err := io.WriteString(c, before.raw+head); err != nil { // one write
						t.Fatal(err)
					}
					if before.raw != "" {
						if resp, _ := readReply(t, br, before.method); resp.StatusCode != 200 || resp.Header.Get("X-Uri") != "/first" {
							t.Fatalf("%s: status %d for %q, want 200 for /first", before.name, resp.StatusCode, resp.Header.Get("X-Uri"))
						}
					}
					// The status line only: a 400 closes with the rest of
					// the head unread, and the reset may cut what follows.
					line, err := br.ReadString('\n')
					c.Close()
					if err != nil {
						t.Fatalf("limit %d, %s of %d bytes %s: %v", limit, h.name, len(head), before.name, err)
					}
					if want := fmt.Sprintf("HTTP/1.1 %d ", h.status); !strings.HasPrefix(line, want) {
						t.Errorf("limit %d, %s of %d bytes %s: %q, want %s", limit, h.name, len(head), before.name, line, want)
					}
				}
			}
		}
	}
}

func TestBothLengthAndChunkedClosesAfterReply(t *testing.T) {
	_, addr, _ := start(t, echo())
	c, br := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := readReply(t, br, "POST")
	if body != "{}" || !resp.Close {
		t.Fatalf("body %q (want the chunked one), close %v", body, resp.Close)
	}
	if !closedAfter(t, c, br) {
		t.Fatal("connection open after a request with both framings")
	}
}

func TestUnreadLargeBodyClosesConnection(t *testing.T) {
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") }))
	c, br := dial(t, addr)
	n := maxDiscard + 64<<10
	go func() {
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "+itoa(n)+"\r\n\r\n")
		c.Write(make([]byte, n))
	}()
	resp, _ := readReply(t, br, "POST")
	if !resp.Close {
		t.Fatal("no Connection: close with a large body left unread")
	}
}

func TestPanicClosesConnectionAndLogs(t *testing.T) {
	_, addr, logs := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/abort" {
			panic(http.ErrAbortHandler)
		}
		panic("boom")
	}))
	for _, p := range []string{"/boom", "/abort"} {
		c, br := dial(t, addr)
		io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: a\r\n\r\n")
		if !closedAfter(t, c, br) {
			t.Fatalf("%s: connection not closed", p)
		}
	}
	time.Sleep(50 * time.Millisecond)
	out := logs.String()
	if !strings.Contains(out, "panic serving") || !strings.Contains(out, "boom") || !strings.Contains(out, "goroutine") {
		t.Fatalf("log %q lacks the panic and its stack", out)
	}
	if strings.Count(out, "panic serving") != 1 {
		t.Fatalf("http.ErrAbortHandler logged: %q", out)
	}
}

func TestSuperfluousWriteHeaderLogged(t *testing.T) {
	_, addr, logs := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(201)
		w.WriteHeader(500)
	}))
	resp, _ := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET")
	if resp.StatusCode != 201 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "superfluous response.WriteHeader call from") || !strings.Contains(logs.String(), "behaviour_test.go") {
		t.Fatalf("log %q", logs.String())
	}
}

func TestRequestContextAndAddresses(t *testing.T) {
	type seen struct {
		local  net.Addr
		remote string
		err    error
	}
	got := make(chan seen, 1)
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		rc := http.NewResponseController(w)
		err := errors.Join(rc.SetReadDeadline(time.Now().Add(time.Second)), rc.SetWriteDeadline(time.Now().Add(time.Second)))
		got <- seen{la, r.RemoteAddr, err}
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readReply(t, br, "GET")
	s := <-got
	if s.local == nil || s.local.String() != addr || s.remote != c.LocalAddr().String() || s.err != nil {
		t.Fatalf("local %v (want %s), remote %q (want %s), deadlines %v", s.local, addr, s.remote, c.LocalAddr(), s.err)
	}
}

func TestHijackGivesBufferedBytes(t *testing.T) {
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		next, _ := brw.Reader.Peek(brw.Reader.Buffered())
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: "+itoa(len(next))+"\r\nConnection: close\r\n\r\n"+string(next))
	}))
	resp, body := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\n", "GET")
	if resp.StatusCode != 200 || body != "GET /next HTTP/1.1\r\n" {
		t.Fatalf("status %d, body %q", resp.StatusCode, body)
	}
}

func TestShutdownClosesIdleAndWaitsForActive(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	s, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "done")
	}))
	idle, idleBr := dial(t, addr)
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readReply(t, idleBr, "GET")
	busy, busyBr := dial(t, addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if !closedAfter(t, idle, idleBr) {
		t.Fatal("idle connection not closed by Shutdown")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a request active", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	resp, body := readReply(t, busyBr, "GET")
	if body != "done" || !resp.Close {
		t.Fatalf("active request: %q, close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("still accepting after Shutdown")
	}
}

func TestShutdownContextEnds(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{})
	s, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	c, _ := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
}

// Deadlines a handler set for one request do not outlive it: the next
// request on the connection, arriving after they passed, reads its body
// in parts and gets its reply. The first handler sets them once its reply
// is out whole, so a loaded machine's pause cannot make them cut that
// reply (set before the body was read, 30 ms apart from the last write,
// they could).
func TestHandlerDeadlinesEndWithTheRequest(t *testing.T) {
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			panic(err)
		}
		w.Header().Set("Content-Length", itoa(len(b)))
		w.Write(b)
		if r.URL.Path == "/first" {
			rc := http.NewResponseController(w)
			rc.Flush()
			rc.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
			rc.SetWriteDeadline(time.Now().Add(30 * time.Millisecond))
		}
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "POST /first HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n1")
	if _, body := readReply(t, br, "POST"); body != "1" {
		t.Fatalf("first reply %q", body)
	}
	time.Sleep(100 * time.Millisecond)
	io.WriteString(c, "POST /second HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n2")
	time.Sleep(60 * time.Millisecond)
	io.WriteString(c, "2")
	if _, body := readReply(t, br, "POST"); body != "22" {
		t.Fatalf("second reply %q", body)
	}
}

// TestTransferEncodingInHTTP10ClosesAfterReply: RFC 9112 section 6.1, a
// Transfer-Encoding in an HTTP/1.0 request makes its framing faulty: the
// request is framed as net/http frames it (by Content-Length, here none)
// and the connection closes after the reply, so what followed is never
// read as a request.
func TestTransferEncodingInHTTP10ClosesAfterReply(t *testing.T) {
	_, addr, _ := start(t, echo())
	c, br := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := readReply(t, br, "POST")
	if body != "" || !resp.Close {
		t.Fatalf("body %q (want none), close %v", body, resp.Close)
	}
	if !closedAfter(t, c, br) {
		t.Fatal("connection open after an HTTP/1.0 request with a Transfer-Encoding")
	}
}

// halfCloseCounter counts the CloseWrite calls on the connections of a
// listener: the server's linger before it closes a connection whose
// client may still be sending.
type halfCloseCounter struct {
	net.Listener
	n atomic.Int64
}

func (l *halfCloseCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &halfClosedConn{TCPConn: c.(*net.TCPConn), n: &l.n}, nil
}

type halfClosedConn struct {
	*net.TCPConn
	n *atomic.Int64
}

func (c *halfClosedConn) CloseWrite() error {
	c.n.Add(1)
	return c.TCPConn.CloseWrite()
}

// A handler that closes a body of more than maxDiscard unread gets, as
// under net/http's server (its body's early close), a reply with
// "Connection: close" and the linger (a half close first) that keeps a
// client still sending the body from a reset that destroys the reply.
func TestBodyClosedLargeLingers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl := &halfCloseCounter{Listener: l}
	serveOn(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body.Close()
		io.WriteString(w, "x")
	}), ErrorLog: discardLog()}, hl)
	c, br := dial(t, l.Addr().String())
	n := maxDiscard + 64<<10
	go func() {
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "+itoa(n)+"\r\n\r\n")
		c.Write(make([]byte, n))
	}()
	resp, body := readReply(t, br, "POST")
	if body != "x" || !resp.Close {
		t.Fatalf("body %q, close %v", body, resp.Close)
	}
	if !closedAfter(t, c, br) {
		t.Fatal("connection open after a large body closed unread")
	}
	if got := hl.n.Load(); got != 1 {
		t.Fatalf("%d half closes before the close, want 1", got)
	}
}
