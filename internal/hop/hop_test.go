package hop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// countingServer is an httptest server that counts the connections it
// accepted.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
}

func newCountingServer(t *testing.T, h http.Handler) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func newTransport(t *testing.T) *Transport {
	t.Helper()
	tr := &Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func do(t *testing.T, tr *Transport, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading reply to %s %s: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

func post(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func get(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRoundTripCarriesRequestAndReply(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Mcp-Session-Id")+" "+r.Host)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "echo:%s", b)
	}))
	tr := newTransport(t)
	for i := range 5 {
		req := post(t, srv.URL+"/mcp?x=1", fmt.Sprintf(`{"n":%d}`, i))
		req.Header.Set("Mcp-Session-Id", "abc")
		resp, body := do(t, tr, req)
		if want := fmt.Sprintf(`echo:{"n":%d}`, i); body != want || resp.StatusCode != http.StatusOK {
			t.Fatalf("reply %d = %d %q, want 200 %q", i, resp.StatusCode, body, want)
		}
		host := strings.TrimPrefix(srv.URL, "http://")
		if got, want := resp.Header.Get("X-Seen"), "POST /mcp?x=1 abc "+host; got != want {
			t.Fatalf("upstream saw %q, want %q", got, want)
		}
	}
	wantConns(t, srv, tr, 1, 1, "5 sequential requests, kept alive")
}

// wantConns checks how many connections the upstream accepted and how many
// the pool holds.
func wantConns(t *testing.T, srv *countingServer, tr *Transport, accepted, pooled int, why string) {
	t.Helper()
	if n := srv.conns.Load(); n != int64(accepted) {
		t.Fatalf("%s: upstream accepted %d connections, want %d", why, n, accepted)
	}
	if n := tr.Idle(); n != pooled {
		t.Fatalf("%s: pool holds %d connections, want %d", why, n, pooled)
	}
}

func TestNoBodyRepliesReleaseTheConnection(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted) // a notification's reply
	}))
	tr := newTransport(t)
	for range 3 {
		resp, err := tr.RoundTrip(post(t, srv.URL, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d, want 202", resp.StatusCode)
		}
		// Closed without reading: an empty body leaves nothing behind.
		resp.Body.Close()
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("3 bodiless replies used %d connections, want 1", n)
	}
}

func TestUnreadReplyIsNotPooled(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 64<<10))
	}))
	tr := newTransport(t)
	resp, err := tr.RoundTrip(get(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := tr.Idle(); n != 0 {
		t.Fatalf("pool holds %d connections after a half-read reply, want 0", n)
	}
	if _, body := do(t, tr, get(t, srv.URL)); len(body) != 64<<10 {
		t.Fatalf("second reply is %d bytes, want %d", len(body), 64<<10)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("upstream saw %d connections, want 2 (the half-read one is not reused)", n)
	}
}

func TestConnectionCloseIsHonoured(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	}))
	tr := newTransport(t)
	for range 2 {
		if _, body := do(t, tr, get(t, srv.URL)); body != "bye" {
			t.Fatalf("body %q", body)
		}
	}
	wantConns(t, srv, tr, 2, 0, "Connection: close")
}

// TestUpstreamClosedIdleConnection restarts the upstream's side of every
// pooled connection: the next request, even a POST that may not be
// replayed, must go out on a fresh connection and succeed.
func TestUpstreamClosedIdleConnection(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	tr := newTransport(t)
	do(t, tr, post(t, srv.URL, "1"))
	// Closes the upstream's side of the pooled connection. (Turning
	// keep-alives off and on again would race with the server marking the
	// connection idle, and sometimes close nothing.)
	srv.CloseClientConnections()
	waitFor(t, "the upstream to close its idle connection", func() bool {
		// The peek alive() does must now see the end of stream.
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, cs := range tr.idle {
			for _, c := range cs {
				return !alive(c.nc)
			}
		}
		return false
	})
	if _, body := do(t, tr, post(t, srv.URL, "2")); body != "ok" {
		t.Fatalf("body %q", body)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("upstream saw %d connections, want 2", n)
	}
}

// rawServer accepts connections and hands each to serve with its index.
func rawServer(t *testing.T, serve func(i int, c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(i, c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

const okReply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// TestRetryOnlyWhatIsSafe: the upstream reads a second request on a
// kept-alive connection and hangs up without a word. A GET is sent again on
// a fresh connection; a POST is not, since the upstream may have acted on it.
func TestRetryOnlyWhatIsSafe(t *testing.T) {
	for _, tc := range []struct {
		method string
		retry  bool
	}{{http.MethodGet, true}, {http.MethodPost, false}} {
		t.Run(tc.method, func(t *testing.T) {
			var conns atomic.Int64
			url := rawServer(t, func(i int, c net.Conn, br *bufio.Reader) {
				conns.Add(1)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if i == 0 && n == 1 {
						return // hang up on the second request of the first connection
					}
					io.WriteString(c, okReply)
				}
			})
			tr := newTransport(t)
			newReq := func() *http.Request {
				req, err := http.NewRequest(tc.method, url, strings.NewReader("body"))
				if err != nil {
					t.Fatal(err)
				}
				return req
			}
			do(t, tr, newReq())
			resp, err := tr.RoundTrip(newReq())
			if tc.retry {
				if err != nil {
					t.Fatalf("retried %s failed: %v", tc.method, err)
				}
				resp.Body.Close()
				if n := conns.Load(); n != 2 {
					t.Fatalf("upstream saw %d connections, want 2", n)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("%s on a connection that hung up succeeded; it must not be sent twice", tc.method)
			}
			if !errors.Is(err, io.EOF) {
				t.Fatalf("error %v, want one wrapping io.EOF", err)
			}
		})
	}
}

func TestInterimRepliesAreSkipped(t *testing.T) {
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"+okReply)
	})
	tr := newTransport(t)
	resp, body := do(t, tr, get(t, url))
	if resp.StatusCode != http.StatusOK || body != "ok" {
		t.Fatalf("reply %d %q, want 200 ok", resp.StatusCode, body)
	}
}

func TestResponseHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer close(release)
	tr := &Transport{ResponseHeaderTimeout: 50 * time.Millisecond}
	defer tr.CloseIdleConnections()
	_, err := tr.RoundTrip(get(t, srv.URL))
	if err == nil || !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Fatalf("error %v, want a response-header timeout", err)
	}
}

// TestStallAfterWriteDoesNotStretchTheHeadTimeout: ResponseHeaderTimeout
// counts from the request's write, so a round trip that stalls between
// the write and the read (a busy machine; here a hook) for longer than the
// timeout fails with the timeout even though the reply, late, has come by
// then. Timing here cannot fail a sound Transport: the stall begins once the
// upstream has the request (after the write began) and lasts longer than
// the timeout, so the deadline has passed before the read, however slow the
// machine. Both writers are covered: the inline one and net/http's, which
// streams a body of unknown length. The reply is sent once the write is
// over: one that comes while net/http's writer still writes is read by the
// watch for an early answer, in time, and is taken.
func TestStallAfterWriteDoesNotStretchTheHeadTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		body func() io.Reader
	}{
		{"inline", func() io.Reader { return strings.NewReader("ping") }},
		{"streamed", func() io.Reader { return io.MultiReader(strings.NewReader("ping")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replied, written := make(chan struct{}, 1), make(chan struct{})
			url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				<-written
				io.WriteString(c, okReply)
				replied <- struct{}{}
				io.Copy(io.Discard, br) // until the Transport hangs up
			})
			tr := &Transport{ResponseHeaderTimeout: timeout}
			defer tr.CloseIdleConnections()
			tr.wrote = func() {
				close(written)
				<-replied // the request was written before this
				time.Sleep(timeout + timeout/4)
			}
			req, err := http.NewRequest(http.MethodPost, url, tc.body())
			if err != nil {
				t.Fatal(err)
			}
			if (req.ContentLength > 0) != (tc.name == "inline") {
				t.Fatalf("request length %d: not the %s writer's", req.ContentLength, tc.name)
			}
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatal("a reply read after a stall longer than ResponseHeaderTimeout was taken: the stall stretched the timeout")
			}
			if !strings.Contains(err.Error(), "timeout awaiting response headers") {
				t.Fatalf("error %v, want a response-header timeout", err)
			}
		})
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
	}))
	defer close(release)
	tr := newTransport(t)
	ctx, cancel := context.WithCancel(context.Background())
	req := get(t, srv.URL).WithContext(ctx)
	go func() { <-arrived; cancel() }()
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := tr.Idle(); n != 0 {
		t.Fatalf("pool holds %d connections after a cancelled request, want 0", n)
	}
}

// hookCtx is a context with an AfterFunc method of its own, which the
// context package allows a parent to have: it counts what is registered
// on it and stopped, and is canceled by the context it wraps.
type hookCtx struct {
	context.Context
	registered, stopped atomic.Int32
}

func (h *hookCtx) AfterFunc(f func()) func() bool {
	h.registered.Add(1)
	stop := context.AfterFunc(h.Context, f)
	return func() bool {
		ok := stop()
		if ok {
			h.stopped.Add(1)
		}
		return ok
	}
}

// TestCancelThroughAfterFuncMethod: on a context with an AfterFunc method
// the connection's watch registers there, and cancelling it still closes
// the connection under a waiting round trip.
func TestCancelThroughAfterFuncMethod(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select { // bounded: a cancel that closes nothing fails, not hangs
		case <-release:
		case <-time.After(5 * time.Second):
		}
	}))
	defer close(release)
	tr := newTransport(t)
	inner, cancel := context.WithCancel(context.Background())
	ctx := &hookCtx{Context: inner}
	go func() { <-arrived; cancel() }()
	_, err := tr.RoundTrip(get(t, srv.URL).WithContext(ctx))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := ctx.registered.Load(); n != 1 {
		t.Fatalf("%d registrations on the context's AfterFunc, want 1", n)
	}
	if n := tr.Idle(); n != 0 {
		t.Fatalf("pool holds %d connections after a cancelled request, want 0", n)
	}
}

// TestWatchStoppedWithTheReply: a round trip done (its reply read and
// closed) stops its watch, so that cancelling the context afterwards does
// not close the connection, which carries the next request.
func TestWatchStoppedWithTheReply(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	tr := newTransport(t)
	inner, cancel := context.WithCancel(context.Background())
	ctx := &hookCtx{Context: inner}
	do(t, tr, get(t, srv.URL).WithContext(ctx))
	if r, s := ctx.registered.Load(), ctx.stopped.Load(); r != 1 || s != 1 {
		t.Fatalf("%d registered, %d stopped, want 1 and 1", r, s)
	}
	cancel()
	time.Sleep(50 * time.Millisecond) // a function wrongly left registered runs by then
	do(t, tr, get(t, srv.URL))
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections for two requests, want 1", n)
	}
}

// TestStreamedReplyArrivesEventByEvent: a reply is handed over as the
// upstream writes it, not when it ends.
func TestStreamedReplyArrivesEventByEvent(t *testing.T) {
	next := make(chan struct{})
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
	}))
	tr := newTransport(t)
	resp, err := tr.RoundTrip(get(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("data: %d\n", i); line != want {
			t.Fatalf("line %q, want %q", line, want)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the events: %q, %v", rest, err)
	}
	if n := tr.Idle(); n != 1 {
		t.Fatalf("pool holds %d connections after the stream ended, want 1", n)
	}
}

func TestIdleTimeoutAndMaxIdle(t *testing.T) {
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		io.WriteString(w, "ok")
	}))
	// The timeout is long enough that no connection expires before the
	// pool is counted, even on a stalled machine.
	tr := &Transport{MaxIdle: 2, IdleTimeout: time.Second}
	defer tr.CloseIdleConnections()
	// Three requests at once need three connections; only two are kept.
	arrived.Add(3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			resp, err := tr.RoundTrip(get(t, srv.URL))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	if n := tr.Idle(); n != 2 {
		t.Fatalf("pool holds %d connections, want MaxIdle 2", n)
	}
	waitFor(t, "the idle timeout to empty the pool", func() bool { return tr.Idle() == 0 })
}

func TestFallback(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls")
	}))
	defer srv.Close()
	tr := &Transport{}
	if _, err := tr.RoundTrip(get(t, srv.URL)); err == nil {
		t.Fatal("an https request without a Fallback succeeded")
	}
	tr.Fallback = srv.Client().Transport
	if _, body := do(t, tr, get(t, srv.URL)); body != "tls" {
		t.Fatalf("body %q via the fallback, want tls", body)
	}
	tr.CloseIdleConnections()
}

// TestConcurrentRoundTrips runs many requests at once (under -race in CI)
// and checks every reply reached the request that asked for it.
func TestConcurrentRoundTrips(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	tr := newTransport(t)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				want := fmt.Sprintf("%d-%d", g, i)
				resp, err := tr.RoundTrip(post(t, srv.URL, want))
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != want {
					t.Errorf("reply %q, %v; want %q", b, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := srv.conns.Load(); n > 16 {
		t.Fatalf("16 workers opened %d connections, want at most 16", n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, time.Minute, cond, what)
}

// TestBuffered: a relay asks whether the body's first bytes came with the
// headers, to send both in one write.
func TestBuffered(t *testing.T) {
	release := make(chan struct{})
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Query().Has("quiet") {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-release
		}
		io.WriteString(w, "data: x\n\n")
	}))
	tr := newTransport(t)
	for _, tc := range []struct {
		query   string
		arrived bool
	}{{"", true}, {"?quiet", false}} {
		resp, err := tr.RoundTrip(get(t, srv.URL+tc.query))
		if err != nil {
			t.Fatal(err)
		}
		if tc.arrived {
			// The headers and the event are one write upstream; wait until
			// they are both here, as they are in one segment on loopback.
			waitFor(t, "the event", func() bool { return resp.Body.(interface{ Buffered() int }).Buffered() > 0 })
		} else if n := resp.Body.(interface{ Buffered() int }).Buffered(); n != 0 {
			t.Fatalf("%d bytes buffered while the upstream holds its body", n)
		}
		if !tc.arrived {
			close(release)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// TestPoolKeepsEveryConnectionOnce drives the idle pool (pop, put, evict,
// expire) through a long random sequence over a few partitions and checks
// it against a plain model after every step: each partition's idle list
// holds exactly the connections put there and not taken since, none twice
// and none of another partition's. Reused list room (a list emptied by a
// pop refilled by the next put) must never let one list write over
// another.
func TestPoolKeepsEveryConnectionOnce(t *testing.T) {
	tr := &Transport{MaxIdle: 5, IdleTimeout: time.Hour}
	defer tr.CloseIdleConnections()
	keys := []string{"a", "b", "c"}
	model := map[string][]*conn{}
	var out []*conn // taken, to be put back
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 5000 {
		switch op := rng.IntN(4); {
		case op == 0 || len(out) == 0: // a new connection
			nc, peer := net.Pipe()
			defer peer.Close()
			c := newConn(nc, "upstream")
			c.key = keys[rng.IntN(len(keys))]
			out = append(out, c)
		case op == 1: // a round trip ends: back to the pool
			i := rng.IntN(len(out))
			c := out[i]
			out = append(out[:i], out[i+1:]...)
			full := tr.n >= 5
			tr.put(c)
			model[c.key] = append(model[c.key], c)
			if full { // the connection idle longest made room
				var gone *conn
				for _, k := range keys {
					for _, x := range model[k] {
						if !slices.Contains(tr.idle[k], x) {
							if gone != nil {
								t.Fatalf("step %d: a full pool dropped two connections for one", step)
							}
							gone = x
						}
					}
				}
				if gone == nil || gone == c {
					t.Fatalf("step %d: a full pool made no room for the connection put", step)
				}
				for _, k := range keys {
					for _, x := range model[k] {
						if x.since.Before(gone.since) {
							t.Fatalf("step %d: a full pool dropped a connection newer than another", step)
						}
					}
				}
				model[gone.key] = without(model[gone.key], gone)
			}
		default: // a request of a partition takes its newest idle connection
			k := keys[rng.IntN(len(keys))]
			c := tr.pop(k)
			want := model[k]
			if len(want) == 0 {
				if c != nil {
					t.Fatalf("step %d: pop(%s) gave a connection of %s from an empty partition", step, k, c.key)
				}
				continue
			}
			if c != want[len(want)-1] {
				t.Fatalf("step %d: pop(%s) did not give the newest idle connection of %s", step, k, k)
			}
			model[k] = want[:len(want)-1]
			out = append(out, c)
		}
		n := 0
		for _, k := range keys {
			got := tr.idle[k]
			if len(got) != len(model[k]) {
				t.Fatalf("step %d: partition %s holds %d idle connections, want %d", step, k, len(got), len(model[k]))
			}
			for i := range got {
				if got[i] != model[k][i] {
					t.Fatalf("step %d: partition %s's idle list differs from what was put at %d", step, k, i)
				}
			}
			if _, ok := tr.idle[k]; ok && len(got) == 0 {
				t.Fatalf("step %d: partition %s kept an empty idle list", step, k)
			}
			n += len(got)
		}
		if n != tr.n {
			t.Fatalf("step %d: the pool counts %d idle connections and holds %d", step, tr.n, n)
		}
	}
}

func without(cs []*conn, c *conn) []*conn {
	var rest []*conn
	for _, x := range cs {
		if x != c {
			rest = append(rest, x)
		}
	}
	return rest
}

// TestCarries: what the Transport carries itself, and so is done with
// once a reply's body is closed, against what goes to its Fallback.
func TestCarries(t *testing.T) {
	for _, c := range []struct {
		url, upgrade string
		want         bool
	}{
		{"http://127.0.0.1:1/mcp", "", true},
		{"https://127.0.0.1:1/mcp", "", false},
		{"http://127.0.0.1:1/mcp", "websocket", false},
	} {
		req, _ := http.NewRequest(http.MethodPost, c.url, nil)
		if c.upgrade != "" {
			req.Header.Set("Upgrade", c.upgrade)
		}
		if got := Carries(req); got != c.want {
			t.Errorf("Carries(%s, Upgrade %q) = %v, want %v", c.url, c.upgrade, got, c.want)
		}
	}
}

// headDeadlineUpstream answers /fast at once with a short body, /hang
// never before release, and /slow with its head at once and its body in
// pieces spread over spread.
func headDeadlineUpstream(t *testing.T, release chan struct{}, spread time.Duration) *countingServer {
	return newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/slow":
			w.Header().Set("Content-Length", "3")
			w.WriteHeader(http.StatusOK)
			for _, b := range []string{"a", "b", "c"} {
				io.WriteString(w, b)
				w.(http.Flusher).Flush()
				time.Sleep(spread / 3)
			}
		default:
			io.WriteString(w, "ok")
		}
	}))
}

// TestHeadDeadlineIsMovedLazily: the deadline of ResponseHeaderTimeout
// is not moved for a call on a connection whose last reply came whole
// less than a sixteenth of the timeout before (it stays in force from
// that reply), and it still bounds that call's head; a reply whose body
// comes in pieces over more than the timeout is read whole (its body
// reads without the deadline); and a connection pooled for longer than
// the timeout is reused, not found dead because of a deadline that
// passed while it idled.
func TestHeadDeadlineIsMovedLazily(t *testing.T) {
	const timeout = 1600 * time.Millisecond // a lazy delay of 100 ms
	release := make(chan struct{})
	defer close(release)
	srv := headDeadlineUpstream(t, release, 2*timeout)
	tr := &Transport{ResponseHeaderTimeout: timeout}
	defer tr.CloseIdleConnections()
	pooled := func() *conn {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, cs := range tr.idle {
			if len(cs) == 1 {
				return cs[0]
			}
		}
		t.Fatal("not exactly one pooled connection")
		return nil
	}

	do(t, tr, get(t, srv.URL+"/fast"))
	set := pooled().headSet
	if set.IsZero() {
		t.Fatal("no deadline in force after a reply that came whole: it was lifted")
	}
	do(t, tr, get(t, srv.URL+"/fast"))
	if again := pooled().headSet; !again.Equal(set) && again.Sub(set) < lazydeadline.Delay(timeout) {
		t.Fatalf("the deadline was moved %v after it was set, within the lazy delay", again.Sub(set))
	}

	start := time.Now()
	_, err := tr.RoundTrip(get(t, srv.URL+"/hang"))
	if err == nil || !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Fatalf("error %v, want a response-header timeout", err)
	}
	if took := time.Since(start); took < timeout*15/16 {
		t.Fatalf("timed out after %v, want at least %v", took, timeout*15/16)
	}

	do(t, tr, get(t, srv.URL+"/fast")) // a new connection, its deadline kept
	if resp, body := do(t, tr, get(t, srv.URL+"/slow")); resp.StatusCode != http.StatusOK || body != "abc" {
		t.Fatalf("slow body: %d %q, want 200 abc", resp.StatusCode, body)
	}

	do(t, tr, get(t, srv.URL+"/fast"))
	dials := tr.dials.Load()
	time.Sleep(timeout + 100*time.Millisecond) // the kept deadline passes while pooled
	do(t, tr, get(t, srv.URL+"/fast"))
	if n := tr.dials.Load() - dials; n != 0 {
		t.Fatalf("a connection pooled past its kept deadline was dropped: %d new dials", n)
	}
}

// TestIdleTimerCountsFromTheLastReturn: a connection's idle timer runs on
// while it carries requests, but the connection is closed only once it has
// idled in the pool for IdleTimeout since its last return, however long
// it has been in use; and then it is closed.
func TestIdleTimerCountsFromTheLastReturn(t *testing.T) {
	const idle = 300 * time.Millisecond
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	tr := &Transport{IdleTimeout: idle}
	defer tr.CloseIdleConnections()
	// A call every sixth of the timeout for twice the timeout: the timer
	// the first return started fires while the connection idles in the
	// pool between calls, for much less than the timeout. A loaded
	// machine may stretch a pause past the timeout, anywhere between one
	// call's return and the next one's pool lookup: a pause counts as
	// late when from the start of one call to the end of the next
	// (bounds this test can see around that span) IdleTimeout or more
	// passed, and each late pause may cost one dial more, or not (a
	// timer due may not have run yet).
	var late int64
	var prev time.Time
	for first := time.Now(); time.Since(first) < 2*idle; time.Sleep(idle / 6) {
		begun := time.Now()
		do(t, tr, get(t, srv.URL))
		if !prev.IsZero() && time.Since(prev) >= idle {
			late++
		}
		prev = begun
	}
	if n := tr.dials.Load(); n < 1 || n > 1+late {
		t.Fatalf("%d connections dialled for calls a sixth of IdleTimeout apart (%d pauses past it), want 1 to %d: the pooled one was closed early", n, late, 1+late)
	}
	waitFor(t, "the idle timeout to empty the pool", func() bool { return tr.Idle() == 0 })
}

// TestReadAfterCloseFails: a reply body read after its Close says so, as
// net/http's Transport's bodies do, whether the reply was read half, whole
// or not at all, of a length or chunked; it does not hand out what was
// left of the reply in the connection's buffer. net/http's Transport is
// the judge, against the same server.
func TestReadAfterCloseFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", "12")
		}
		io.WriteString(w, "hello, world")
	}))
	t.Cleanup(srv.Close)
	judge := &http.Transport{}
	t.Cleanup(judge.CloseIdleConnections)
	for _, url := range []string{srv.URL, srv.URL + "?chunked=1"} {
		for _, before := range []int{0, 5, 12} {
			var outcome [2]string
			for i, rt := range []http.RoundTripper{judge, newTransport(t)} {
				resp, err := rt.RoundTrip(get(t, url))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(resp.Body, make([]byte, before)); err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				n, err := resp.Body.Read(make([]byte, 64))
				outcome[i] = fmt.Sprintf("%d, %v", n, err)
			}
			if outcome[0] != outcome[1] {
				t.Errorf("%s, %d bytes read before Close: a read after it gives %q, net/http's Transport %q", url, before, outcome[1], outcome[0])
			}
		}
	}
}
