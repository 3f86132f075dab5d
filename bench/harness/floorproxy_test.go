package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The floor's tests talk HTTP/1.1 to it over loopback as RFC 9112 writes
// it: requests are raw bytes written in the pieces a test chooses, replies
// are read with net/http's own reader (http.ReadResponse), and the
// upstreams are a net/http server or a raw one that writes its replies in
// pieces. Every read has a deadline, so a floor that holds bytes back fails
// rather than hangs.

const floorWait = 5 * time.Second

// startFloor serves the floor in front of upstream (host:port) until the
// test ends and gives its address.
func startFloor(t *testing.T, upstream string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveLoop(ctx, l, upstream, relayFloor) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(floorWait):
			t.Error("the floor still serving 5s after its context ended")
		}
	})
	return l.Addr().String()
}

// echoUpstream is a net/http upstream that replies to every request with
// its body, sized by Content-Length, and counts the requests it read.
func echoUpstream(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

// rawUpstream accepts connections and runs serve on each until the test
// ends, for replies net/http would not write the way a test needs.
func rawUpstream(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) string {
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
				c.SetDeadline(time.Now().Add(floorWait))
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return l.Addr().String()
}

// dialFloor connects to the floor with a deadline on every read and write.
func dialFloor(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(floorWait))
	return c, bufio.NewReader(c)
}

// writePieces writes each piece separately, pausing between them so that
// each arrives on its own.
func writePieces(c net.Conn, pieces ...string) error {
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := io.WriteString(c, p); err != nil {
			return err
		}
	}
	return nil
}

// writeIn is writePieces on the test's goroutine.
func writeIn(t *testing.T, c net.Conn, pieces ...string) {
	t.Helper()
	if err := writePieces(c, pieces...); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readReply reads one whole reply and its body.
func readReply(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read reply body: %v", err)
	}
	return resp, string(b)
}

func postReq(body string) string {
	return "POST /echo HTTP/1.1\r\nHost: floor\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// TestFloorRequestBodySplit: a request whose head and body arrive in
// several pieces reaches the upstream whole (its Content-Length says where
// it ends), and the Content-Length reply comes back whole.
func TestFloorRequestBodySplit(t *testing.T) {
	t.Parallel()
	up, _ := echoUpstream(t)
	c, br := dialFloor(t, startFloor(t, up))
	req := postReq("hello, split world")
	writeIn(t, c, req[:10], req[10:len(req)-12], req[len(req)-12:len(req)-5], req[len(req)-5:])
	resp, body := readReply(t, br, http.MethodPost)
	if resp.StatusCode != http.StatusOK || resp.ContentLength != 18 || len(resp.TransferEncoding) != 0 || body != "hello, split world" {
		t.Errorf("reply %d, Content-Length %d, %v: %q; want 200 with the 18 bytes sent", resp.StatusCode, resp.ContentLength, resp.TransferEncoding, body)
	}
}

// TestFloorPipelined: two requests written at once are answered in order,
// each with its own body, and a third on the same connection after them.
func TestFloorPipelined(t *testing.T) {
	t.Parallel()
	up, n := echoUpstream(t)
	c, br := dialFloor(t, startFloor(t, up))
	writeIn(t, c, postReq("first")+"GET /none HTTP/1.1\r\nHost: floor\r\n\r\n"+postReq("second"))
	for _, want := range []string{"first", "", "second"} {
		if _, body := readReply(t, br, http.MethodPost); body != want {
			t.Errorf("pipelined reply %q, want %q", body, want)
		}
	}
	writeIn(t, c, postReq("third"))
	if _, body := readReply(t, br, http.MethodPost); body != "third" {
		t.Errorf("reply after the pipelined ones %q, want %q", body, "third")
	}
	if got := n.Load(); got != 4 {
		t.Errorf("the upstream read %d requests, want 4", got)
	}
}

// TestFloorLargeReply: a Content-Length reply larger than the floor's
// buffer arrives whole, byte for byte, and the connection goes on.
func TestFloorLargeReply(t *testing.T) {
	t.Parallel()
	up, _ := echoUpstream(t)
	c, br := dialFloor(t, startFloor(t, up))
	big := strings.Repeat("0123456789abcdef", 3*floorBuffer/16+7)
	go writePieces(c, postReq(big)+postReq("after"))
	if _, body := readReply(t, br, http.MethodPost); body != big {
		t.Errorf("large reply of %d bytes, want the %d sent", len(body), len(big))
	}
	if _, body := readReply(t, br, http.MethodPost); body != "after" {
		t.Errorf("reply after the large one %q, want %q", body, "after")
	}
}

// TestFloorChunkedEvents: a chunked reply is relayed as its chunks arrive:
// the client reads the first event while the upstream still holds the
// second back, then the rest, then the connection serves the next request.
func TestFloorChunkedEvents(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sse" {
			w.Header().Set("Content-Length", "4")
			io.WriteString(w, "next")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(floorWait):
		}
		io.WriteString(w, "data: 2\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: 3\n\n")
	}))
	t.Cleanup(srv.Close)
	c, br := dialFloor(t, startFloor(t, strings.TrimPrefix(srv.URL, "http://")))
	writeIn(t, c, "GET /sse HTTP/1.1\r\nHost: floor\r\n\r\n")
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("Transfer-Encoding %v, want chunked", resp.TransferEncoding)
	}
	// Under floorWait, after which the upstream sends the rest itself: a
	// floor that held the first event back for it would pass.
	c.SetReadDeadline(time.Now().Add(floorWait - time.Second))
	first := make([]byte, len("data: 1\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: 1\n\n" {
		t.Fatalf("first event before the upstream sent the second: %q, %v", first, err)
	}
	close(release)
	c.SetReadDeadline(time.Now().Add(floorWait))
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: 2\n\ndata: 3\n\n" {
		t.Errorf("the rest of the stream %q, %v", rest, err)
	}
	writeIn(t, c, "GET /next HTTP/1.1\r\nHost: floor\r\n\r\n")
	if _, body := readReply(t, br, http.MethodGet); body != "next" {
		t.Errorf("reply after the stream %q, want %q", body, "next")
	}
}

// TestFloorReplyInPieces: replies whose head, chunk lines, chunk ends and
// trailer section arrive split at awkward places are relayed whole.
func TestFloorReplyInPieces(t *testing.T) {
	t.Parallel()
	up := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for _, pieces := range [][]string{
			{"HTTP/1.1 200 OK\r\nContent-Le", "ngth: 5\r\n\r", "\nhel", "lo"},
			{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", "\r\n5", "\r", "\nhello\r", "\n6;x=y\r\n world\r\n0\r\nTrailer-A: 1\r\n", "\r\n"},
		} {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if writePieces(c, pieces...) != nil {
				return
			}
		}
	})
	c, br := dialFloor(t, startFloor(t, up))
	for _, want := range []string{"hello", "hello world"} {
		writeIn(t, c, "GET / HTTP/1.1\r\nHost: floor\r\n\r\n")
		resp, body := readReply(t, br, http.MethodGet)
		if resp.StatusCode != http.StatusOK || body != want {
			t.Errorf("reply %d %q, want 200 %q", resp.StatusCode, body, want)
		}
	}
}

// TestFloorDropsUnframed: a request the floor cannot frame closes the
// client's connection with no reply and reaches no upstream, and so does a
// reply it cannot frame.
func TestFloorDropsUnframed(t *testing.T) {
	t.Parallel()
	up, n := echoUpstream(t)
	floor := startFloor(t, up)
	const head = "POST /echo HTTP/1.1\r\nHost: floor\r\n"
	for name, req := range map[string]string{
		"Content-Length not a number":  head + "Content-Length: five\r\n\r\nhello",
		"Content-Length values differ": head + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
		"both framings":                head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"coding without chunked":       head + "Transfer-Encoding: gzip\r\n\r\nhello",
		"white space before colon":     head + "Content-Length : 5\r\n\r\nhello",
		"obsolete line folding":        head + "X-A: 1\r\n 2\r\nContent-Length: 5\r\n\r\nhello",
		"no version":                   "POST /echo\r\nHost: floor\r\nContent-Length: 5\r\n\r\nhello",
		"bad chunk size":               head + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	} {
		c, br := dialFloor(t, floor)
		writeIn(t, c, req)
		if b, err := br.ReadByte(); err == nil {
			t.Errorf("%s: the floor answered (%q...), want the connection dropped", name, b)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: the connection still open after %s, want it dropped", name, floorWait)
		}
	}
	// The chunked request with a bad chunk size was sent on: its head frames.
	if got := n.Load(); got > 1 {
		t.Errorf("the upstream read %d of the unframed requests, want at most the chunked one", got)
	}
	bad := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nhello")
			time.Sleep(floorWait)
		}
	})
	c, br := dialFloor(t, startFloor(t, bad))
	writeIn(t, c, "GET / HTTP/1.1\r\nHost: floor\r\n\r\n")
	if b, err := br.ReadByte(); err == nil {
		t.Errorf("unframed reply: the client got %q..., want the connection dropped", b)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("unframed reply: the connection still open after %s, want it dropped", floorWait)
	}
}

// TestSpendCPUChargesTheThread: spendCPU(d) returns only once its thread
// has spent d of CPU by the thread's own clock, which the kernel keeps
// (the judge here is getrusage's per-thread figure, not spendCPU's clock).
func TestSpendCPUChargesTheThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d = 20 * time.Millisecond
	before := rusageCPU(t, unix.RUSAGE_THREAD)
	spendCPU(d)
	if spent := rusageCPU(t, unix.RUSAGE_THREAD) - before; spent < d-time.Millisecond { // rusage ticks are coarser than the clock
		t.Fatalf("the thread spent %v of CPU in spendCPU(%v), want at least %v", spent, d, d)
	}
}

// rusageCPU is the CPU (user and system) getrusage reports for who:
// unix.RUSAGE_THREAD the calling thread, unix.RUSAGE_SELF the process.
func rusageCPU(t *testing.T, who int) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBusyFloorSpendsItsCPUPerRequest: a floor told to spend busy per
// request costs the process at least that much CPU per request relayed, and
// still relays each request and its reply unchanged. Without the busy spin
// the 20 requests cost the whole test process a few milliseconds, an order
// of magnitude under the bound.
func TestBusyFloorSpendsItsCPUPerRequest(t *testing.T) {
	upstream, n := echoUpstream(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const busy, requests = 5 * time.Millisecond, 20
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveLoop(ctx, l, upstream, func(c, up net.Conn) { relayFloorBusy(c, up, busy) })
	}()
	defer func() { cancel(); <-done }()
	c, br := dialFloor(t, l.Addr().String())
	before := rusageCPU(t, unix.RUSAGE_SELF)
	for i := range requests {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
		if _, err := fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != body {
			t.Fatalf("request %d: reply %q (%v), want its body %q echoed", i, got, err, body)
		}
	}
	if spent, want := rusageCPU(t, unix.RUSAGE_SELF)-before, time.Duration(requests)*busy; spent < want {
		t.Fatalf("%d requests through a floor busy %v per request cost the process %v of CPU, want at least %v", requests, busy, spent, want)
	}
	if got := n.Load(); got != requests {
		t.Fatalf("the upstream read %d requests, want %d", got, requests)
	}
}
