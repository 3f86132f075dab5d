package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
	"github.com/skills-sidecar/skills-sidecar/internal/h1"
	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
)

// countingConn is a client connection of the sidecar's own server that
// counts the moves of its read and write deadlines. It embeds the TCP connection, so
// the server still reaches its descriptor (package rawsock) as in
// production.
type countingConn struct {
	*net.TCPConn
	moves *moves
}

// moves counts the moves of read and write deadlines.
type moves struct{ read, write atomic.Int64 }

func (c countingConn) SetReadDeadline(t time.Time) error {
	c.moves.read.Add(1)
	return c.TCPConn.SetReadDeadline(t)
}

func (c countingConn) SetWriteDeadline(t time.Time) error {
	c.moves.write.Add(1)
	return c.TCPConn.SetWriteDeadline(t)
}

type countingListener struct {
	net.Listener
	moves *moves
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{TCPConn: c.(*net.TCPConn), moves: l.moves}, nil
}

// ownServerCounting serves the proxy in front of upstream with package
// h1's server (the sidecar's default) and returns its address and the
// count of deadline moves on its client connections.
func ownServerCounting(t *testing.T, upstream string, opts proxy.Options) (string, *moves) {
	t.Helper()
	return ownServerWith(t, upstream, opts, 10*time.Second)
}

// ownServerWith is ownServerCounting with the server's ReadHeaderTimeout.
func ownServerWith(t *testing.T, upstream string, opts proxy.Options, readHeader time.Duration) (string, *moves) {
	t.Helper()
	p := newProxy(t, upstream, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	moves := &moves{}
	serveOwn(t, p, countingListener{Listener: l, moves: moves}, readHeader)
	return l.Addr().String(), moves
}

// serveOwn serves h on l with package h1's server (the sidecar's default)
// until the test ends.
func serveOwn(t testing.TB, h http.Handler, l net.Listener, readHeader time.Duration) {
	srv := &h1.Server{Handler: h, ReadHeaderTimeout: readHeader, IdleTimeout: time.Minute}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// callMessage is a forwarded tools/call with id, head and body.
func callMessage(addr string, id int) (head, body string) {
	body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id)
	head = fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	return head, body
}

// readCallReply reads the reply to call id from br and wants 200.
func readCallReply(t *testing.T, c net.Conn, br *bufio.Reader, id int) {
	t.Helper()
	if err := callReply(c, br, id); err != nil {
		t.Fatal(err)
	}
}

// callReply is readCallReply that says what went wrong instead.
func callReply(c net.Conn, br *bufio.Reader, id int) error {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("call %d: %v", id, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("call %d: status %d", id, resp.StatusCode)
	}
	return nil
}

// call writes a tools/call in two pieces (the body after pause, or with
// the head when pause is 0) and reads the reply.
func call(t *testing.T, c net.Conn, br *bufio.Reader, addr string, id int, pause time.Duration) {
	t.Helper()
	head, body := callMessage(addr, id)
	if pause == 0 {
		_, _ = io.WriteString(c, head+body)
	} else {
		_, _ = io.WriteString(c, head)
		time.Sleep(pause)
		_, _ = io.WriteString(c, body)
	}
	readCallReply(t, c, br, id)
}

// TestWholeCallsMoveNoDeadline: on the sidecar's own server, a request
// whose body came whole with its head makes no read wait, and moves no
// read deadline (each move is a lock and a timer update in the runtime's
// poller); the connection's idle deadline is moved at most once a second,
// and the send timeout's write deadline at most once a lazy delay. A body
// that comes after its head is still bounded by ClientBodyTimeout
// (TestStalledBodyGets408OnOwnServer), which moves the deadline.
func TestWholeCallsMoveNoDeadline(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{})
	addr, moves := ownServerCounting(t, up.URL+"/mcp", proxy.Options{ClientBodyTimeout: 10 * time.Second, SendTimeout: 10 * time.Second})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	call(t, c, br, addr, 1, 0) // the connection's own first deadlines
	const whole = 20
	before, wbefore, start := moves.read.Load(), moves.write.Load(), time.Now()
	for i := range whole {
		call(t, c, br, addr, 2+i, 0)
	}
	// Once a second at most for the idle deadline and once a lazy delay
	// (300 ms for the send timeout's 10 s) for the write deadline: 20
	// calls on a quiet machine take well under 300 ms and may cross a
	// boundary or two; a loaded one may cross one more boundary for each
	// second or delay they took, and no more.
	took := time.Since(start)
	if got, most := moves.read.Load()-before, 3+int64(took/time.Second); got > most {
		t.Errorf("%d calls whose bodies came whole moved the read deadline %d times in %v, want at most %d", whole, got, took, most)
	}
	if got, most := moves.write.Load()-wbefore, 3+int64(took/lazydeadline.Delay(10*time.Second)); got > most {
		t.Errorf("%d calls moved the write deadline %d times in %v, want at most %d", whole, got, took, most)
	}
	const split = 3
	before = moves.read.Load()
	for i := range split {
		call(t, c, br, addr, 100+i, 30*time.Millisecond)
	}
	// Set for the body, cleared after it, the idle deadline set again.
	if got := moves.read.Load() - before; got < 2*split {
		t.Errorf("%d calls whose bodies came after their heads moved the read deadline %d times, want at least %d", split, got, 2*split)
	}
}

// TestStalledBodyGets408OnOwnServer: TestStalledBodyGets408 on package
// h1's server: a body that stops short of its Content-Length is not taken
// for one that came whole, and gets 408 once ClientBodyTimeout passes.
func TestStalledBodyGets408OnOwnServer(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{})
	addr, _ := ownServerCounting(t, up.URL+"/mcp", proxy.Options{ClientBodyTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", addr)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no reply to a stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
	if n := up.Requests(); n != 0 {
		t.Errorf("upstream got %d requests, want 0", n)
	}
}

// TestPipelinedHeadAfterWholeCallGetsItsOwnHeaderTimeout: the request
// headers timeout bounds each head (docs/security.md, "Timeouts"), not the
// connection's first second. A call whose body came whole with its head
// sets no body deadline; the head pipelined behind it, whose rest comes
// six tenths of the timeout after its start, past the first head's bound,
// is still served.
func TestPipelinedHeadAfterWholeCallGetsItsOwnHeaderTimeout(t *testing.T) {
	t.Parallel()
	const readHeader = time.Second
	up := faultserver.Start(t, faultserver.Options{})
	addr, _ := ownServerWith(t, up.URL+"/mcp", proxy.Options{ClientBodyTimeout: 10 * time.Second, SendTimeout: 10 * time.Second}, readHeader)
	msg := func(id int) string {
		head, body := callMessage(addr, id)
		return head + body
	}
	part := readHeader * 6 / 10
	// A head served honestly within its bound may still miss it when the
	// machine stalls for the 400 ms the sleeps leave: an attempt whose
	// first head or second head's two pieces came more than the bound
	// (less the lazy delay) apart is made again, at most twice. A server
	// that bounded both heads from the connection's start fails every
	// attempt: the second head ends 1.2 s after it.
	honest := readHeader - lazydeadline.Delay(readHeader)
	for attempt := 1; ; attempt++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		dialled := time.Now()
		time.Sleep(part)
		second := msg(2)
		_, _ = io.WriteString(c, msg(1)+second[:20])
		begun := time.Now()
		err = callReply(c, br, 1)
		if err == nil {
			time.Sleep(part)
			_, _ = io.WriteString(c, second[20:])
			ended := time.Since(begun)
			if err = callReply(c, br, 2); err != nil && ended >= honest && attempt < 3 {
				t.Logf("attempt %d: %v, the second head's pieces %v apart; again", attempt, err, ended)
				c.Close()
				continue
			}
		} else if first := begun.Sub(dialled); first >= honest && attempt < 3 {
			t.Logf("attempt %d: %v, the first head %v after the dial; again", attempt, err, first)
			c.Close()
			continue
		}
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}
