//go:build unix

package hop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchLeavesNoDeadline: a watch that saw the upstream refuse the
// request only after the request was out (a quick answer), and one that
// saw nothing, leave the connection as they found it: the next write and
// the next read are not cut short by a deadline of the watch's.
func TestWatchLeavesNoDeadline(t *testing.T) {
	const refusal = "HTTP/1.1 413 Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
	for _, answer := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		up, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		lim := &headLimit{r: nc, n: -1} // what the watch read, then the socket
		stop, _ := newPeeker(nc).watch(nc, lim)
		want := "b"
		if answer {
			up.Write([]byte(refusal))
			want = refusal + want
			waitFor(t, "the watch to see the answer", func() bool {
				// The watch's own deadline on writes is what it sets when it
				// sees one: a write fails at once.
				_, err := nc.Write(nil)
				return err != nil
			})
		}
		if saw := stop(); saw != answer {
			t.Fatalf("answered %v: the watch saw %v", answer, saw)
		}
		if _, err := nc.Write([]byte("next")); err != nil {
			t.Errorf("answered %v: a write after the watch: %v", answer, err)
		}
		go func() {
			time.Sleep(100 * time.Millisecond) // the read below waits for it
			up.Write([]byte("b"))
		}()
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(lim, buf); err != nil || string(buf) != want {
			t.Errorf("answered %v: a read after the watch: %q, %v", answer, buf, err)
		}
	}
}

// TestEarlyAnswerWhileTheUpstreamStopsReading: the upstream answers 413 as
// soon as it has the request head and then neither reads the rest of a
// body too large for the socket buffers nor closes, whether its answer
// says the connection closes or not (/keeps). The answer is the reply, as
// net/http's Transport, which reads while it writes, returns it on the
// same bytes (RFC 9112, 9.6: a client sending a body watches for an
// answer meanwhile): the write is not left waiting for reads that never
// come. The connection is not reused. A well-behaved upstream, which reads
// a large body whole and then answers, keeps its connection.
func TestEarlyAnswerWhileTheUpstreamStopsReading(t *testing.T) {
	// What comes before the answer, and fields it carries besides: a
	// head, or interim replies before it, longer than the watch's first
	// look (watchWindow) are judged too.
	hint := "HTTP/1.1 103 Early Hints\r\nLink: </" + strings.Repeat("a", 1000) + ">; rel=preload\r\n\r\n"
	stalls := map[string]string{"/stall": "", "/long-head": "", "/long-hints": strings.Repeat(hint, 5), "/keeps": ""}
	stallFields := map[string]string{"/long-head": "X-Filler: " + strings.Repeat("f", 5000) + "\r\n"}
	closes := func(path string) string {
		if path == "/keeps" {
			return "" // nor does it read on
		}
		return "Connection: close\r\n"
	}
	release := make(chan struct{})
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if before, ok := stalls[req.URL.Path]; ok {
				_, _ = io.WriteString(c, before+"HTTP/1.1 413 Request Entity Too Large\r\n"+closes(req.URL.Path)+
					stallFields[req.URL.Path]+"Content-Length: 9\r\n\r\ntoo large")
				<-release // reads nothing more, and stays
				return
			}
			n, _ := io.Copy(io.Discard, req.Body)
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.FormatInt(n, 10)+"\r\n\r\n"+strings.Repeat("r", int(n)))
		}
	})
	t.Cleanup(func() { close(release) }) // before rawServer's cleanup waits for it
	big := bytes.Repeat([]byte("x"), 32<<20)
	for _, rt := range []struct {
		name string
		rt   http.RoundTripper
	}{{"net/http", &http.Transport{}}, {"hop", newTransport(t)}} {
		for path := range stalls {
			t.Run(rt.name+path, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(big))
				resp, err := rt.rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip: %v; want the upstream's 413", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != "too large" {
					t.Fatalf("got %d %q, want the upstream's 413", resp.StatusCode, body)
				}
				if tr, ok := rt.rt.(*Transport); ok && tr.Idle() != 0 {
					t.Errorf("the connection whose request was not written whole was pooled")
				}
			})
		}
	}
	tr := newTransport(t)
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, url+"/read", bytes.NewReader(big[:1<<20]))
		if resp, body := do(t, tr, req); resp.StatusCode != http.StatusOK || len(body) != 1<<20 {
			t.Fatalf("a body read whole: got %d and %d bytes, want 200 and as many bytes", resp.StatusCode, len(body))
		}
	}
	if got := tr.dials.Load(); got != 1 {
		t.Errorf("two large requests to an upstream that reads them whole took %d connections, want 1", got)
	}
}

// TestWatchLetsTheRequestGoOn: answers an upstream gives while it still
// reads the request do not stop the request's write: 100 Continue (Go's
// server sends it at the handler's first read of a body whose request
// expects it), 103 Early Hints, and a 2xx head sent before the body is
// read. Each call gets its reply whole, as through net/http's Transport
// on the same bytes.
func TestWatchLetsTheRequestGoOn(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 8<<20) // more than the socket buffers hold
	goServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, strconv.FormatInt(n, 10))
	}))
	t.Cleanup(goServer.Close)
	raw := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			switch req.URL.Path {
			case "/early-hints":
				io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n")
				n, _ := io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(strconv.FormatInt(n, 10)))+"\r\n\r\n"+strconv.FormatInt(n, 10))
			case "/head-first":
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
				n, _ := io.Copy(io.Discard, req.Body)
				s := strconv.FormatInt(n, 10)
				io.WriteString(c, strconv.FormatInt(int64(len(s)), 16)+"\r\n"+s+"\r\n0\r\n\r\n")
			}
		}
	})
	netHTTP := &http.Transport{}
	t.Cleanup(netHTTP.CloseIdleConnections) // before the upstreams wait for their connections
	for _, tc := range []struct {
		name, url string
		expect    bool
	}{
		{"100 Continue from Go's server", goServer.URL + "/", true},
		{"103 Early Hints", raw + "/early-hints", false},
		{"a 2xx head before the body is read", raw + "/head-first", false},
	} {
		for _, rt := range []struct {
			name string
			rt   http.RoundTripper
		}{{"net/http", netHTTP}, {"hop", newTransport(t)}} {
			t.Run(tc.name+"/"+rt.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tc.url, bytes.NewReader(body))
				if tc.expect {
					req.Header.Set("Expect", "100-continue")
				}
				resp, err := rt.rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || string(got) != strconv.Itoa(len(body)) {
					t.Errorf("got %d %q (%v); want 200 and the upstream's count of the whole body, %d", resp.StatusCode, got, err, len(body))
				}
			})
		}
	}
}

// TestUpstreamGoneBeforeTheRequestIsNoTimeout: an upstream that closes each
// connection as soon as it is made. The watch of a large request may see
// the close before the request's first byte goes out and stop the write
// then; the call fails as a hang-up (io.EOF, which the proxy answers 502),
// never with the watch's own deadline, which reads as a timeout (504).
// Many calls, for the close to come first in some.
func TestUpstreamGoneBeforeTheRequestIsNoTimeout(t *testing.T) {
	url := rawServer(t, func(int, net.Conn, *bufio.Reader) {}) // closes at once
	tr := newTransport(t)
	body := bytes.Repeat([]byte("x"), 1<<20)
	for i := range 2000 {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("call %d: an answer from an upstream that closes at once", i)
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("call %d: %v, a timeout; want the upstream's hang-up", i, err)
		}
	}
}

// TestTrickledAnswerIsLookedAtOnce: an upstream that sends its early
// answer a byte at a time (an interim reply, then a long final head) while
// a large request is still being written must cost the watch work in
// proportion to the answer's length, not its length times the pieces it
// came in: looking again at all of it at each piece made a head of
// MaxResponseHead cost about its length squared. Counted by the bytes each
// look spans (lookHook), not by a clock; each byte is sent once the watch
// has looked at the one before, so that every byte is a piece of its own.
// Not parallel: lookHook is the package's.
func TestTrickledAnswerIsLookedAtOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n")
	b.WriteString("HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 9\r\n")
	for b.Len() < watchWindow+watchWindow/2 {
		b.WriteString("X-Pad: 0123456789abcdef\r\n") // past the watch's first window
	}
	b.WriteString("\r\n")
	head := b.String()
	var spanned atomic.Int64
	woke := make(chan struct{}, 1)
	lookHook = func(n int) {
		spanned.Add(int64(n))
		select {
		case woke <- struct{}{}:
		default:
		}
	}
	defer func() { lookHook = nil }()
	release := make(chan struct{})
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		guard := time.NewTimer(hangGuard) // a hang guard only: past it, the bytes go unpaced
		defer guard.Stop()
		for i := 0; i < len(head); i++ {
			if _, err := io.WriteString(c, head[i:i+1]); err != nil {
				return
			}
			select {
			case <-woke:
			case <-guard.C:
			}
		}
		io.WriteString(c, "too large")
		<-release // reads nothing more, and stays
	})
	t.Cleanup(func() { close(release) }) // before rawServer's cleanup waits for it
	ctx, cancel := context.WithTimeout(context.Background(), 2*hangGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(bytes.Repeat([]byte("x"), 32<<20)))
	resp, err := newTransport(t).RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v; want the upstream's 413", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != "too large" {
		t.Fatalf("got %d %q, want the upstream's 413", resp.StatusCode, body)
	}
	// Each byte is looked at a few times: as it is read, as the end of
	// its head is looked for (with the two bytes before it), and once
	// more when its head is judged whole. Looking again at all of it at
	// each byte spans about its length squared, tens of millions here.
	if bound := int64(8 * len(head)); spanned.Load() > bound {
		t.Errorf("a %d-byte answer sent a byte at a time was looked at over %d bytes, want at most %d", len(head), spanned.Load(), bound)
	}
}

// TestHalfAnswerThenHangUpIsNoTimeout: the upstream starts an answer while
// a large request is still going out, then ends its side of the connection
// before the head is whole, and reads no more. The watch sees the end and
// stops the write by a deadline of its own; the call fails on the head cut
// short, as net/http's Transport reports it, not on that deadline ("i/o
// timeout", which the proxy answers 504 when nothing hides it), though the
// upstream neither kept the caller waiting nor said it would time out.
func TestHalfAnswerThenHangUpIsNoTimeout(t *testing.T) {
	release := make(chan struct{})
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		// A head with no end, then its end of the connection, with no
		// reset: it reads nothing more, and stays.
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 9\r\n")
		c.(*net.TCPConn).CloseWrite()
		<-release
	})
	t.Cleanup(func() { close(release) }) // before rawServer's cleanup waits for it
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(bytes.Repeat([]byte("x"), 32<<20)))
	resp, err := newTransport(t).RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got %d; want the call to fail on the head cut short", resp.StatusCode)
	}
	if ctx.Err() != nil {
		t.Fatalf("the call waited for its caller to give up: %v", err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
		t.Errorf("%v: the watch's deadline; want the upstream's hang-up", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("%v; want the head cut short (unexpected EOF)", err)
	}
}
