package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Attacks on what a server does beside parsing (watching for the client's
// end, reading off unread bodies, deadlines, memory held while idle,
// hijacking, goroutines). Most run against this package's server and
// against net/http's with the same handler and bytes, so that a failure is
// a difference from what net/http's server did for the proxy.

type serveFunc func(t *testing.T, h http.Handler) string

func ownServer(t *testing.T, h http.Handler) string {
	_, addr, _ := start(t, h, func(s *Server) { s.MaxHeaderBytes = 64 << 10 })
	return addr
}

func netServer(t *testing.T, h http.Handler) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10, ErrorLog: discardLog()}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

func both(t *testing.T, f func(t *testing.T, serve serveFunc)) {
	t.Run("net/http", func(t *testing.T) { f(t, netServer) })
	t.Run("h1", func(t *testing.T) { f(t, ownServer) })
}

// slowTimeout is the ReadHeaderTimeout and IdleTimeout of the servers
// bothSlow starts: far beyond hangGuard, so that a reply held until one
// of the server's own timeouts passes fails the test however loaded the
// machine.
const slowTimeout = 5 * time.Minute

// hangGuard is how long a test waits for what a correct server does at
// once (or at a deadline of milliseconds) before it counts as never: a
// guard against a hang, not a measure of speed.
const hangGuard = 30 * time.Second

// bothSlow is both with servers whose own timeouts are slowTimeout.
func bothSlow(t *testing.T, f func(t *testing.T, serve serveFunc)) {
	t.Run("net/http", func(t *testing.T) {
		f(t, func(t *testing.T, h http.Handler) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s := &http.Server{Handler: h, ReadHeaderTimeout: slowTimeout, IdleTimeout: slowTimeout, MaxHeaderBytes: 64 << 10, ErrorLog: discardLog()}
			go s.Serve(l)
			t.Cleanup(func() { s.Close() })
			return l.Addr().String()
		})
	})
	t.Run("h1", func(t *testing.T) {
		f(t, func(t *testing.T, h http.Handler) string {
			_, addr, _ := start(t, h, func(s *Server) {
				s.MaxHeaderBytes = 64 << 10
				s.ReadHeaderTimeout, s.IdleTimeout = slowTimeout, slowTimeout
			})
			return addr
		})
	})
}

// A client that sends one byte more than its request (the start of a
// pipelined one) in the same segment and then leaves: net/http's
// background read sees the end and cancels the request's context; a
// stream that writes nothing (serveOwnStream waits on the context alone)
// must not outlive its client.
func TestClientGoneAfterPipelinedByte(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		gone := make(chan bool, 1)
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				gone <- true
			case <-time.After(goneWait):
				gone <- false
			}
		}))
		c, _ := dial(t, addr)
		io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\nG")
		time.Sleep(100 * time.Millisecond)
		c.Close()
		if !<-gone {
			t.Fatal("the stream's context was not canceled when its client left")
		}
	})
}

// A handler that refuses a request with a large declared body without
// reading it: net/http answers at once (it does not discard 256 KiB or
// more) and closes; the client that sends nothing more must not hold the
// reply back.
func TestRefusalOfLargeBodyNotHeldByDrain(t *testing.T) {
	bothSlow(t, func(t *testing.T, serve serveFunc) {
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		}))
		c, br := dial(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10000000\r\n\r\n{")
		// A reply held for the body waits on a client that sends no more:
		// at best until the servers' ReadHeaderTimeout (slowTimeout), far
		// past hangGuard; a reply not held comes at once.
		t0 := time.Now()
		c.SetReadDeadline(time.Now().Add(hangGuard))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no reply after %v: %v", time.Since(t0), err)
		}
		if resp.StatusCode != 413 {
			t.Fatalf("status %d after %v", resp.StatusCode, time.Since(t0))
		}
	})
}

// The watcher's byte of a pipelined request reaches a handler that
// hijacks the connection.
func TestHijackKeepsWatcherByte(t *testing.T) {
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(6 * watchDelay)
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		line, _ := brw.Reader.ReadString('\n')
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: "+itoa(len(line))+"\r\nConnection: close\r\n\r\n"+line)
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(3 * watchDelay)
	io.WriteString(c, "NEXT\n")
	_, body := readReply(t, br, "GET")
	if body != "NEXT\n" {
		t.Fatalf("hijacker read %q", body)
	}
}

// heapInUse is the heap in use after two collections.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// memPerConn opens n kept-alive connections that each send one request
// with a head of headLen bytes and read a reply of replyLen bytes, and
// returns the heap they hold, per connection, while idle.
func memPerConn(t *testing.T, serve serveFunc, n, headLen, replyLen int) uint64 {
	body := strings.Repeat("x", replyLen)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	before := heapInUse()
	pad := strings.Repeat("p", headLen)
	for range n {
		c, br := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: "+pad+"\r\n\r\n")
		if _, b := readReply(t, br, "GET"); len(b) != replyLen {
			t.Fatalf("reply of %d bytes", len(b))
		}
	}
	time.Sleep(100 * time.Millisecond)
	after := heapInUse()
	if after < before {
		return 0
	}
	return (after - before) / uint64(n)
}

// An idle kept-alive connection does not keep what its longest head and
// largest reply made the server allocate (the read buffer grown to
// MaxHeaderBytes, reply buffers of up to 64 KiB and 128 KiB): it holds
// about what net/http's does.
func TestIdleConnectionMemory(t *testing.T) {
	for _, tc := range []struct{ head, reply int }{{100, 100}, {20 << 10, 100}, {100, 100 << 10}, {20 << 10, 100 << 10}} {
		var got [2]uint64
		for i, serve := range []serveFunc{netServer, ownServer} {
			got[i] = memPerConn(t, serve, 200, tc.head, tc.reply)
		}
		t.Logf("head %6d B, reply %6d B: net/http %6d B/conn, h1 %6d B/conn", tc.head, tc.reply, got[0], got[1])
		if got[1] > 2*got[0]+16<<10 {
			t.Errorf("h1 holds %d B per idle connection, net/http %d", got[1], got[0])
		}
	}
}

// stalledMemPerConn opens n connections that each send headLen bytes of a
// head and stall, and returns the heap they hold, per connection, while
// they wait for the rest.
func stalledMemPerConn(t *testing.T, serve serveFunc, n, headLen int) uint64 {
	addr := serve(t, http.NotFoundHandler())
	before := heapInUse()
	part := "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: " + strings.Repeat("p", headLen)
	for range n {
		c, _ := dial(t, addr)
		io.WriteString(c, part)
	}
	time.Sleep(300 * time.Millisecond) // for the servers to read what came
	after := heapInUse()
	if after < before {
		return 0
	}
	return (after - before) / uint64(n)
}

// A client that sends part of a long head and stalls makes the server hold
// about what net/http's holds for it, not a buffer of MaxHeaderBytes: the
// read buffer grows with the head, not to the limit at once.
func TestStalledLongHeadMemory(t *testing.T) {
	for _, headLen := range []int{4200, 20 << 10, 40 << 10} {
		var got [2]uint64
		for i, serve := range []serveFunc{netServer, ownServer} {
			got[i] = stalledMemPerConn(t, serve, 100, headLen)
		}
		t.Logf("stalled after %6d B of head: net/http %6d B/conn, h1 %6d B/conn", headLen, got[0], got[1])
		if got[1] > 2*got[0]+16<<10 {
			t.Errorf("stalled after %d B of head, h1 holds %d B per connection, net/http %d", headLen, got[1], got[0])
		}
	}
}

// A chunked body whose next chunk comes after the server's own timeouts
// have passed is read to its end: ReadHeaderTimeout bounds the head and
// IdleTimeout the wait for one, and neither is left in force on a body
// read that waits for the socket with part of the body already buffered,
// here the chunk's first bytes. net/http's server sets no deadline on a
// body unless the handler does. Three ways in: the connection's first
// request, a request after one on a kept-alive connection (the idle
// deadline), and a head with bare LFs, which net/http's reader parses and
// whose body it reads.
func TestBodyOutlastsTheServersOwnTimeouts(t *testing.T) {
	const timeout = 300 * time.Millisecond
	servers := []struct {
		name  string
		serve func(t *testing.T) string
	}{
		{"net/http", func(t *testing.T) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s := &http.Server{Handler: echo(), ReadHeaderTimeout: timeout, IdleTimeout: timeout, MaxHeaderBytes: 64 << 10, ErrorLog: discardLog()}
			go s.Serve(l)
			t.Cleanup(func() { s.Close() })
			return l.Addr().String()
		}},
		{"h1", func(t *testing.T) string {
			_, addr, _ := start(t, echo(), func(s *Server) { s.ReadHeaderTimeout, s.IdleTimeout = timeout, timeout })
			return addr
		}},
	}
	for _, tc := range []struct{ name, before, head string }{
		{"first request", "", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"after a request", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"head for net/http's reader", "", "POST / HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n"},
	} {
		for _, srv := range servers {
			t.Run(tc.name+"/"+srv.name, func(t *testing.T) {
				c, br := dial(t, srv.serve(t))
				c.SetReadDeadline(time.Now().Add(hangGuard))
				if tc.before != "" {
					io.WriteString(c, tc.before)
					readReply(t, br, "GET")
				}
				io.WriteString(c, tc.head+"5\r\nhel")
				time.Sleep(3 * timeout)
				io.WriteString(c, "lo\r\n0\r\n\r\n")
				if resp, body := readReply(t, br, "POST"); resp.StatusCode != 200 || body != "hello" {
					t.Errorf("got %d %q, want 200 \"hello\"", resp.StatusCode, body)
				}
			})
		}
	}
}

// A handler that reads the body on a goroutine of its own, as a proxy's
// transport does, while it sets its write deadline: the "100 Continue"
// the read sends and the handler's deadline touch the same state, which
// the race detector (go test -race, this project's default) watches. The
// deadline set stays in force over the reply.
func TestContinueBesideSetWriteDeadline(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		done := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(r.Body)
			done <- b
		}()
		rc.SetWriteDeadline(time.Now().Add(hangGuard))
		rc.SetWriteDeadline(time.Now().Add(hangGuard))
		w.Write(<-done)
	})
	_, addr, _ := start(t, h)
	c, br := dial(t, addr)
	for range 20 {
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
		if resp, err := http.ReadResponse(br, &http.Request{Method: "POST"}); err != nil || resp.StatusCode != 100 {
			t.Fatalf("want 100 Continue: %v %v", resp, err)
		}
		io.WriteString(c, "hello")
		if resp, body := readReply(t, br, "POST"); resp.StatusCode != 200 || body != "hello" {
			t.Fatalf("got %d %q, want 200 \"hello\"", resp.StatusCode, body)
		}
	}
}

// The proxy's client-body-timeout: a read deadline the handler sets bounds
// a stalled body, and its 408 goes out.
func TestHandlerReadDeadlineBoundsBody(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := io.ReadAll(r.Body); err != nil {
				w.Header().Set("Connection", "close")
				http.Error(w, err.Error(), http.StatusRequestTimeout)
			}
		}))
		c, br := dial(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n{}")
		// Under the servers' ReadHeaderTimeout (5 s), which must not be
		// what ends the body.
		c.SetReadDeadline(time.Now().Add(4 * time.Second))
		resp, body := readReply(t, br, "POST")
		if resp.StatusCode != 408 || !closedAfter(t, c, br) {
			t.Fatalf("status %d %q", resp.StatusCode, body)
		}
	})
}

// The proxy's send-timeout: a write deadline the handler sets fails the
// write to a client that reads nothing.
func TestHandlerWriteDeadlineBoundsStuckClient(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		failed := make(chan error, 1)
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
			chunk := make([]byte, 64<<10)
			for range 1000 {
				if _, err := w.Write(chunk); err != nil {
					failed <- err
					return
				}
			}
			failed <- nil
		}))
		c, _ := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		select {
		case err := <-failed:
			if err == nil {
				t.Fatal("64 MB written to a client that reads nothing")
			}
		case <-time.After(goneWait):
			t.Fatal("the write deadline did not end a write to a stuck client")
		}
	})
}

// Slow requests (watched) whose clients leave, hijacks and panics leave no
// goroutine behind.
func TestNoGoroutineLeft(t *testing.T) {
	assertNoServerGoroutines(t) // nothing of an earlier test's server
	func() {
		s, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(3 * watchDelay)
			switch r.URL.Path {
			case "/hijack":
				c, _, _ := http.NewResponseController(w).Hijack()
				c.Close()
			case "/panic":
				panic(http.ErrAbortHandler)
			}
			io.WriteString(w, "ok")
		}))
		for i := range 60 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			path := []string{"/", "/hijack", "/panic"}[i%3]
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", path)
			if i%2 == 0 {
				time.Sleep(2 * watchDelay)
				c.Close()
			} else {
				io.Copy(io.Discard, bufio.NewReader(c))
				c.Close()
			}
		}
		time.Sleep(300 * time.Millisecond)
		s.Close()
	}()
	assertNoServerGoroutines(t)
}

// A stream whose request declares a small body the handler never reads (a
// GET stream with a Content-Length): net/http's server discards the body
// when the head goes out (chunkWriter.writeHeader, at a Flush too), then
// watches; the client's leaving must cancel the stream.
func TestClientGoneWithUnreadBody(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		gone := make(chan bool, 1)
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				gone <- true
			case <-time.After(goneWait):
				gone <- false
			}
		}))
		c, _ := dial(t, addr)
		io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx")
		time.Sleep(100 * time.Millisecond)
		c.Close()
		if !<-gone {
			t.Fatal("the stream's context was not canceled when its client left")
		}
	})
}

// What follows a chunked body's last chunk (trailer fields, the empty
// line, then a pipelined request) is read as net/http's server reads it:
// the decoder's differential tests stop at the last size line, and this
// is where the next request begins.
func TestChunkedTrailerThenPipelined(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %q %v %v", r.URL.Path, b, err, r.Trailer)
	})
	next := "GET /second HTTP/1.1\r\nHost: a\r\n\r\n"
	for _, tr := range []string{
		"\r\n", "X-T: 1\r\n\r\n", "X-T: 1\n\n", "\n", "X-T: 1\r\n", "X-T: 1\r\n x\r\n\r\n",
		"bad line\r\n\r\n", "X-T:1\r\nY: 2\r\n\r\n", "\r\r\n", "Host: b\r\nContent-Length: 5\r\n\r\n",
		"X: a\rb\r\n\r\n", " X: 1\r\n\r\n", "X-T: 1\r\n\n", "\n\r\n",
	} {
		for _, head := range []string{
			"POST /first HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
			"POST /first HTTP/1.1\r\nHost: a\r\nTrailer: X-T\r\nTransfer-Encoding: chunked\r\n\r\n",
		} {
			raw := head + "5\r\nhello\r\n0\r\n" + tr + next
			_, ours, _ := start(t, h)
			theirs := netHTTP(t, h)
			got, gotEnd := replies(t, ours, raw, []string{"POST", "GET"})
			want, wantEnd := replies(t, theirs, raw, []string{"POST", "GET"})
			if fmt.Sprintf("%+v %s", got, gotEnd) != fmt.Sprintf("%+v %s", want, wantEnd) {
				t.Errorf("%q:\nours:\n %+v then %s\nnet/http's:\n %+v then %s", raw, got, gotEnd, want, wantEnd)
			}
		}
	}
}

// Under -race: writes and flushes from a second goroutine (as notify's
// inserter does, serialized with the handler's own by a lock), clients
// that leave mid-stream, pipelined requests, and Shutdown in the middle of
// it all. Every request of a client that stays is answered whole (its
// chunked body terminated, ending "end") or refused cleanly (the
// connection ends before a byte of its reply); Shutdown returns nil
// within its context (a hang guard: the handlers end within 80 ms); and
// no goroutine of the server is left (serverGoroutines: none made by or
// running this package's code, exactly).
func TestStressWithShutdown(t *testing.T) {
	assertNoServerGoroutines(t) // nothing of an earlier test's server
	s, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var mu sync.Mutex
		done := make(chan struct{})
		stop := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				mu.Lock()
				fmt.Fprintf(w, "event %d\n", i)
				w.(http.Flusher).Flush()
				mu.Unlock()
			}
		}()
		select {
		case <-r.Context().Done():
		case <-time.After(time.Duration(20+len(r.URL.Path)*10) * time.Millisecond):
		}
		close(stop)
		<-done
		mu.Lock()
		io.WriteString(w, "end\n")
		mu.Unlock()
	}))
	var wg sync.WaitGroup
	var answered, refused atomic.Int64
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return // after the listener closed: refused
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(hangGuard))
			first := "/" + strings.Repeat("a", i%7)
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: a\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n", first)
			if i%3 == 0 {
				time.Sleep(time.Duration(i) * time.Millisecond)
				return
			}
			br := bufio.NewReader(c)
			for _, path := range []string{first, "/x"} {
				if _, err := br.Peek(1); errors.Is(err, io.EOF) || err != nil && strings.Contains(err.Error(), "reset") {
					refused.Add(1)
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Errorf("client %d, %s: a reply begun and not whole: %v", i, path, err)
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || !strings.HasSuffix(string(body), "end\n") {
					t.Errorf("client %d, %s: status %d, body %q, %v: not answered whole", i, path, resp.StatusCode, body, err)
					return
				}
				answered.Add(1)
			}
		}()
	}
	time.Sleep(60 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	begun := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown after %v: %v", time.Since(begun), err)
	}
	wg.Wait()
	t.Logf("%d replies whole, %d requests refused", answered.Load(), refused.Load())
	if answered.Load() == 0 {
		t.Error("no request answered: the stress served nothing")
	}
	s.Close()
	assertNoServerGoroutines(t)
}

// A guard for the fix of the pipelined-byte watch: a client that pipelines
// two requests and half-closes gets both replies (net/http reads the
// buffered request after its background read saw the end).
func TestHalfClosedPipelinedGetsBothReplies(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(4 * watchDelay)
			}
			io.WriteString(w, r.URL.Path)
		}))
		c, br := dial(t, addr)
		io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
		c.(*net.TCPConn).CloseWrite()
		if _, body := readReply(t, br, "GET"); body != "/slow" {
			t.Fatalf("first reply %q", body)
		}
		if _, body := readReply(t, br, "GET"); body != "/next" {
			t.Fatalf("second reply %q", body)
		}
	})
}

// A handler that sets a read deadline and leaves a small body unread, its
// client sending part of it and then nothing: the server reads off the
// rest under the handler's deadline, not a longer one of its own, so the
// reply goes out when that deadline passes, and the connection closes (the
// rest may come later and is not a request).
func TestUnreadBodyReadOffUnderHandlerDeadline(t *testing.T) {
	bothSlow(t, func(t *testing.T, serve serveFunc) {
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			io.WriteString(w, "no body wanted")
		}))
		c, br := dial(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n{}")
		// A read-off under a deadline of the server's own would end at
		// its ReadHeaderTimeout (slowTimeout) at the soonest, far past
		// hangGuard; under the handler's, 200 ms after the handler ran.
		c.SetReadDeadline(time.Now().Add(hangGuard))
		resp, body := readReply(t, br, "POST")
		if resp.StatusCode != 200 || body != "no body wanted" || !closedWithin(t, c, br, hangGuard) {
			t.Fatalf("status %d %q, or the connection stayed open", resp.StatusCode, body)
		}
	})
}

// A goroutine the handler left behind that reads the body after the
// handler returned gets http.ErrBodyReadAfterClose, as from net/http's
// server: on a kept-alive connection (where it must not take bytes of the
// next request) and on one closed after the reply (where the body was
// not read off).
func TestBodyReadAfterHandlerReturned(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep-alive=%v", keep), func(t *testing.T) {
			both(t, func(t *testing.T, serve serveFunc) {
				late := make(chan error, 1)
				next := make(chan struct{})
				addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/first" {
						go func() {
							<-next
							var b [64]byte
							_, err := r.Body.Read(b[:])
							late <- err
						}()
					}
					io.WriteString(w, r.URL.Path)
				}))
				c, br := dial(t, addr)
				conn := ""
				if !keep {
					conn = "Connection: close\r\n"
				}
				io.WriteString(c, "POST /first HTTP/1.1\r\nHost: a\r\n"+conn+"Content-Length: 5\r\n\r\nhello")
				if _, body := readReply(t, br, "POST"); body != "/first" {
					t.Fatalf("first reply %q", body)
				}
				if keep {
					// A second exchange on the connection: the first one is over.
					io.WriteString(c, "GET /second HTTP/1.1\r\nHost: a\r\n\r\n")
					if _, body := readReply(t, br, "GET"); body != "/second" {
						t.Fatalf("second reply %q", body)
					}
				} else if !closedAfter(t, c, br) {
					t.Fatal("the connection stayed open after Connection: close")
				}
				close(next)
				if err := <-late; err != http.ErrBodyReadAfterClose {
					t.Fatalf("late read: %v, want %v", err, http.ErrBodyReadAfterClose)
				}
			})
		})
	}
}

// A client that pipelines two requests and half-closes: the second
// request, served from what was buffered, also sees its client's end (its
// context is canceled), as under net/http's server.
func TestHalfClosedPipelinedSecondSeesEnd(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/first" {
				time.Sleep(4 * watchDelay)
				io.WriteString(w, "first")
				return
			}
			select {
			case <-r.Context().Done():
				io.WriteString(w, "canceled")
			case <-time.After(goneWait):
				io.WriteString(w, "not canceled")
			}
		}))
		c, br := dial(t, addr)
		io.WriteString(c, "GET /first HTTP/1.1\r\nHost: a\r\n\r\nGET /second HTTP/1.1\r\nHost: a\r\n\r\n")
		c.(*net.TCPConn).CloseWrite()
		if _, body := readReply(t, br, "GET"); body != "first" {
			t.Fatalf("first reply %q", body)
		}
		if _, body := readReply(t, br, "GET"); body != "canceled" {
			t.Fatalf("second reply %q", body)
		}
	})
}

// A handler that flushes its reply's head while a goroutine of its own
// reads the request body: the server's read-off at the head and the
// goroutine's reads take turns, as under net/http's server, whose body has
// a lock for it. The goroutine gets the body whole, or what came before the
// read-off and then http.ErrBodyReadAfterClose (whichever took the body's
// rest first), never a part of it or another error; the reply and the next
// request on the connection are framed as ever; and go test -race finds
// no data race.
func TestFlushWhileAnotherGoroutineReadsTheBody(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		type read struct {
			body string
			err  error
		}
		got := make(chan read, 1)
		flushing := make(chan struct{})
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				io.WriteString(w, "again")
				return
			}
			reading, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				var b [5]byte
				_, err := io.ReadFull(r.Body, b[:]) // what came with the head
				close(reading)
				var rest []byte
				if err == nil {
					rest, err = io.ReadAll(r.Body) // waits for the rest
				}
				got <- read{string(b[:]) + string(rest), err}
			}()
			<-reading
			close(flushing)
			w.(http.Flusher).Flush() // the head goes: what is left of the body is read off
			io.WriteString(w, "ok")
			<-done // the goroutine is done before the handler returns
		}))
		c, br := dial(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nhello")
		<-flushing
		io.WriteString(c, "world")
		if resp, body := readReply(t, br, "POST"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("reply %d %q, want 200 ok", resp.StatusCode, body)
		}
		switch g := <-got; {
		case g.err == nil && g.body == "helloworld":
		case g.err == http.ErrBodyReadAfterClose && g.body == "hello":
		default:
			t.Fatalf("the goroutine read %q, %v; want helloworld, or hello and %v", g.body, g.err, http.ErrBodyReadAfterClose)
		}
		io.WriteString(c, "GET /again HTTP/1.1\r\nHost: a\r\n\r\n")
		if resp, body := readReply(t, br, "GET"); resp.StatusCode != 200 || body != "again" {
			t.Fatalf("next reply %d %q, want 200 again", resp.StatusCode, body)
		}
	})
}

// The same with "Expect: 100-continue": the goroutine's first read sends
// "100 Continue" while the handler begins its reply. The interim reply
// comes before the reply's head or not at all, never after it; the
// goroutine gets the body whole or http.ErrBodyReadAfterClose; and go test
// -race finds no data race.
func TestReplyWhileAnotherGoroutineAsksForTheBody(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		got := make(chan error, 1)
		flushing := make(chan struct{})
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reading, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				close(reading)
				b, err := io.ReadAll(r.Body)
				if err == nil && string(b) != "hello" {
					err = fmt.Errorf("read %q, want hello", b)
				}
				got <- err
			}()
			<-reading
			close(flushing)
			w.(http.Flusher).Flush()
			io.WriteString(w, "ok")
			<-done
		}))
		c, br := dial(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		<-flushing
		io.WriteString(c, "hello") // sent whatever came back, so that a read waiting for it ends
		resp, err := http.ReadResponse(br, &http.Request{Method: "POST"})
		if err == nil && resp.StatusCode == http.StatusContinue {
			resp, err = http.ReadResponse(br, &http.Request{Method: "POST"})
		}
		if err != nil {
			t.Fatalf("reading the reply: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("reply %d %q, %v; want 200 ok (after at most one 100 Continue)", resp.StatusCode, body, err)
		}
		if err := <-got; err != nil && err != http.ErrBodyReadAfterClose {
			t.Fatalf("the goroutine's read: %v", err)
		}
	})
}
