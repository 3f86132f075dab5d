package hop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// spareUpstream is a raw HTTP/1.1 upstream on loopback that knows every
// connection it accepted: whether it has carried a request yet and whether
// the other end has closed it. It answers each request with the id of the
// connection it came on and the caller's Authorization header, so a test
// sees which connection carried whose request without asking the Transport.
// Faults are done to the connections that have carried nothing (the spares
// and nothing else, once the test's requests are answered).
type spareUpstream struct {
	t  *testing.T
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	conns []*upConn // in accept order; id is the index
}

type upConn struct {
	nc     net.Conn
	served int  // requests read
	ended  bool // its reader saw the end: the Transport closed it, or a fault did
	hangUp bool // close on the next request instead of answering
}

// upReply is spareUpstream's answer.
type upReply struct {
	Conn   int    `json:"conn"`
	Caller string `json:"caller"`
}

func startSpareUpstream(t *testing.T) *spareUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &spareUpstream{t: t, ln: ln}
	t.Cleanup(u.Close)
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			id := len(u.conns)
			c := &upConn{nc: nc}
			u.conns = append(u.conns, c)
			u.mu.Unlock()
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				u.serve(id, c)
			}()
		}
	}()
	return u
}

func (u *spareUpstream) URL() string { return "http://" + u.ln.Addr().String() }

func (u *spareUpstream) serve(id int, c *upConn) {
	defer func() {
		u.mu.Lock()
		c.ended = true
		u.mu.Unlock()
		c.nc.Close()
	}()
	br := bufio.NewReader(c.nc)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		u.mu.Lock()
		c.served++
		hangUp := c.hangUp
		u.mu.Unlock()
		if hangUp {
			return
		}
		b, _ := json.Marshal(upReply{Conn: id, Caller: req.Header.Get("Authorization")})
		if _, err := fmt.Fprintf(c.nc, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b); err != nil {
			return
		}
	}
}

// Close stops accepting (the port then refuses connections) and closes
// every connection.
func (u *spareUpstream) Close() {
	u.ln.Close()
	u.mu.Lock()
	for _, c := range u.conns {
		c.nc.Close()
	}
	u.mu.Unlock()
	u.wg.Wait()
}

// Accepted is how many connections the upstream accepted.
func (u *spareUpstream) Accepted() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.conns)
}

// unused returns the ids of the open connections that have carried no
// request.
func (u *spareUpstream) unused() []int {
	u.mu.Lock()
	defer u.mu.Unlock()
	var ids []int
	for id, c := range u.conns {
		if c.served == 0 && !c.ended {
			ids = append(ids, id)
		}
	}
	return ids
}

// do runs f on the connections ids.
func (u *spareUpstream) do(ids []int, f func(c *upConn)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, id := range ids {
		f(u.conns[id])
	}
}

// ask sends a request of method through tr with credential and returns the
// upstream's answer.
func ask(tr *Transport, method, url, credential string) (upReply, error) {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return upReply{}, err
	}
	if credential != "" {
		req.Header.Set("Authorization", credential)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return upReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return upReply{}, err
	}
	var r upReply
	if err := json.Unmarshal(b, &r); err != nil {
		return upReply{}, fmt.Errorf("reply %q: %w", b, err)
	}
	return r, nil
}

func mustAsk(t *testing.T, tr *Transport, method, url, credential string) upReply {
	t.Helper()
	r, err := ask(tr, method, url, credential)
	if err != nil {
		t.Fatalf("%s as %q: %v", method, credential, err)
	}
	if r.Caller != credential {
		t.Fatalf("%s as %q got the reply to %q (connection %d)", method, credential, r.Caller, r.Conn)
	}
	return r
}

func spareTransport(t *testing.T, spares int) *Transport {
	t.Helper()
	tr := &Transport{Spares: spares, Partition: []string{"Authorization"}}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// warm sends one request as caller "Bearer first" and waits until the
// Transport holds n spares and the upstream sees n connections that carried
// nothing; it returns their ids.
func warm(t *testing.T, tr *Transport, u *spareUpstream, n int) []int {
	t.Helper()
	mustAsk(t, tr, http.MethodPost, u.URL(), "Bearer first")
	waitFor(t, fmt.Sprintf("%d spares", n), func() bool {
		return tr.IdleSpares() == n && len(u.unused()) == n && !tr.filling()
	})
	return u.unused()
}

// aliveSpares counts the spares a peek finds open and quiet.
func aliveSpares(tr *Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, s := range tr.spares {
		for _, c := range s.conns {
			if alive(c.nc) {
				n++
			}
		}
	}
	return n
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestUnfitSparesAreNeverHandedOut: the upstream closes, half-closes or
// writes a whole unasked response on every spare but the oldest while they
// sit idle. A new caller's request goes out on the one spare left fit (the
// others are tried first, newest first, and closed), and its reply is its
// own; with no spare left fit it goes out on a fresh connection.
func TestUnfitSparesAreNeverHandedOut(t *testing.T) {
	faults := []struct {
		name string
		f    func(c *upConn)
	}{
		{"closed", func(c *upConn) { c.nc.Close() }},
		{"half-closed", func(c *upConn) { c.nc.(*net.TCPConn).CloseWrite() }},
		{"unsolicited response", func(c *upConn) {
			b := `{"conn":-1,"caller":"Bearer someone else"}`
			fmt.Fprintf(c.nc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
		}},
	}
	for _, fault := range faults {
		for _, spareLeft := range []bool{true, false} {
			name := fault.name + "/none fit"
			if spareLeft {
				name = fault.name + "/oldest fit"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				u := startSpareUpstream(t)
				tr := spareTransport(t, 3)
				spares := warm(t, tr, u, 3)
				unfit := spares
				if spareLeft {
					unfit = spares[1:]
				}
				u.do(unfit, fault.f)
				waitFor(t, "the fault to reach the Transport", func() bool {
					return aliveSpares(tr) == len(spares)-len(unfit)
				})
				for _, method := range []string{http.MethodPost, http.MethodGet} {
					cred := "Bearer new " + method
					r := mustAsk(t, tr, method, u.URL(), cred)
					if contains(unfit, r.Conn) {
						t.Fatalf("%s went out on unfit spare %d", method, r.Conn)
					}
					if spareLeft && method == http.MethodPost && r.Conn != spares[0] {
						t.Errorf("POST went out on connection %d, want the fit spare %d", r.Conn, spares[0])
					}
				}
			})
		}
	}
}

// TestSpareClosedAsTheRequestArrives: the spare passes the peek, and the
// upstream (whose idle timeout fired just then) reads the request and hangs
// up without a word. That is the reused-connection case of net/http's
// retry rule: a GET is sent again once on a fresh connection, and a POST,
// which the upstream may have acted on, is not.
func TestSpareClosedAsTheRequestArrives(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			u := startSpareUpstream(t)
			tr := spareTransport(t, 1)
			spares := warm(t, tr, u, 1)
			u.do(spares, func(c *upConn) { c.hangUp = true })
			before := u.Accepted()
			r, err := ask(tr, method, u.URL(), "Bearer new")
			u.mu.Lock()
			served := u.conns[spares[0]].served
			u.mu.Unlock()
			if served != 1 {
				t.Fatalf("the spare carried %d requests, want 1", served)
			}
			if method == http.MethodPost {
				if err == nil {
					t.Fatalf("a POST the upstream hung up on was sent again (answered on connection %d)", r.Conn)
				}
				return
			}
			if err != nil {
				t.Fatalf("GET not retried: %v", err)
			}
			if r.Caller != "Bearer new" || r.Conn < before {
				t.Fatalf("GET answered %+v, want on a connection dialled after the spare", r)
			}
		})
	}
}

// TestSparesStayWithinTheirBound: under many concurrent new callers the
// Transport never holds more than Spares spares, and when the callers are
// done the upstream sees exactly that many connections that carried
// nothing. Every connection carried one caller's requests only.
func TestSparesStayWithinTheirBound(t *testing.T) {
	const spares = 4
	u := startSpareUpstream(t)
	tr := spareTransport(t, spares)
	warm(t, tr, u, spares)

	var over atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := tr.IdleSpares(); n > spares {
				over.Store(int64(n))
			}
		}
	}()
	var mu sync.Mutex
	callerOf := map[int]string{}
	var wg sync.WaitGroup
	for w := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cred := fmt.Sprint("Bearer ", w)
			for range 3 {
				r, err := ask(tr, http.MethodPost, u.URL(), cred)
				if err != nil || r.Caller != cred {
					t.Errorf("caller %d: %+v %v", w, r, err)
					return
				}
				mu.Lock()
				if c, ok := callerOf[r.Conn]; ok && c != cred {
					t.Errorf("connection %d carried %q and %q", r.Conn, c, cred)
				}
				callerOf[r.Conn] = cred
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if n := over.Load(); n != 0 {
		t.Fatalf("the Transport held %d spares, more than %d", n, spares)
	}
	// A dial completes at the Transport before the upstream's accept loop
	// has run, so the upstream's count may lag the Transport's: wait for it
	// to reach the bound, then require both to be exactly at it.
	waitFor(t, "the refill to settle", func() bool { return !tr.filling() && len(u.unused()) >= spares })
	if n, m := tr.IdleSpares(), len(u.unused()); n != spares || m != spares {
		t.Fatalf("after the burst: %d spares held, %d unused connections open at the upstream; want %d and %d", n, m, spares, spares)
	}
}

// TestTakenSpareIsReplaced: taking a spare dials exactly one more.
func TestTakenSpareIsReplaced(t *testing.T) {
	u := startSpareUpstream(t)
	tr := spareTransport(t, 2)
	spares := warm(t, tr, u, 2)
	before := u.Accepted()
	if r := mustAsk(t, tr, http.MethodPost, u.URL(), "Bearer second"); !contains(spares, r.Conn) {
		t.Fatalf("the new caller's request went out on connection %d, not on a spare %v", r.Conn, spares)
	}
	waitFor(t, "the spare to be replaced", func() bool {
		return tr.IdleSpares() == 2 && len(u.unused()) == 2 && !tr.filling()
	})
	if n := u.Accepted() - before; n != 1 {
		t.Fatalf("replacing one spare dialled %d connections, want 1", n)
	}
}

// TestNoDialStormWhileTheUpstreamRefuses: the upstream goes away (its port
// refuses connections, and it closed the spares). Each new caller's request
// fails, having dialled at most twice (its own connection and one refill
// that stops at its first failure), and once they are done nothing dials.
func TestNoDialStormWhileTheUpstreamRefuses(t *testing.T) {
	u := startSpareUpstream(t)
	tr := spareTransport(t, 4)
	warm(t, tr, u, 4)
	u.Close()
	waitFor(t, "the Transport to see the spares closed", func() bool { return aliveSpares(tr) == 0 })
	before := tr.dials.Load()
	const callers = 20
	for i := range callers {
		if r, err := ask(tr, http.MethodPost, u.URL(), fmt.Sprint("Bearer ", i)); err == nil {
			t.Fatalf("a request to a closed port was answered: %+v", r)
		}
	}
	waitFor(t, "refills to stop", func() bool { return !tr.filling() })
	if n := tr.dials.Load() - before; n > 2*callers {
		t.Fatalf("%d failed requests dialled %d times, want at most %d", callers, n, 2*callers)
	}
	if n := tr.IdleSpares(); n != 0 {
		t.Fatalf("%d spares held for an upstream that refuses connections", n)
	}
	tr.mu.Lock()
	sets := len(tr.spares)
	tr.mu.Unlock()
	if sets != 0 {
		t.Fatalf("%d spare sets kept with nothing in them and no refill", sets)
	}
}

// TestSparesExpire: spares unused for IdleTimeout are closed and not
// replaced until a request misses the pool again.
func TestSparesExpire(t *testing.T) {
	u := startSpareUpstream(t)
	tr := &Transport{Spares: 2, IdleTimeout: 100 * time.Millisecond}
	t.Cleanup(tr.CloseIdleConnections)
	mustAsk(t, tr, http.MethodPost, u.URL(), "Bearer first")
	// Not warm: under load the spares may expire before it looks, and a
	// refill stalled past the timeout between its dials may dial a third
	// (the first expired meanwhile), so the count is taken once it ends.
	waitFor(t, "two spares to be dialled", func() bool { return u.Accepted() >= 3 && !tr.filling() })
	dialled := u.Accepted()
	waitFor(t, "the spares to expire", func() bool {
		return tr.IdleSpares() == 0 && len(u.unused()) == 0
	})
	if tr.filling() {
		t.Fatal("expiry started a refill")
	}
	if n := u.Accepted(); n != dialled {
		t.Fatalf("upstream accepted %d connections, %d before the spares expired: expiry dialled", n, dialled)
	}
	mustAsk(t, tr, http.MethodPost, u.URL(), "Bearer other")
	waitFor(t, "the spares to come back after a miss", func() bool { return tr.IdleSpares() == 2 })
}

// TestCloseIdleConnectionsClosesSpares: CloseIdleConnections closes every
// spare, and a refill under way at that moment stops and keeps nothing.
func TestCloseIdleConnectionsClosesSpares(t *testing.T) {
	u := startSpareUpstream(t)
	tr := spareTransport(t, 3)
	warm(t, tr, u, 3)
	tr.CloseIdleConnections()
	if n := tr.IdleSpares(); n != 0 {
		t.Fatalf("%d spares left after CloseIdleConnections", n)
	}
	waitFor(t, "the upstream to see the spares closed", func() bool { return len(u.unused()) == 0 })

	// Again, with the refill that the request starts probably under way.
	for i := range 20 {
		mustAsk(t, tr, http.MethodPost, u.URL(), fmt.Sprint("Bearer ", i))
		tr.CloseIdleConnections()
		waitFor(t, "refills to stop", func() bool { return !tr.filling() })
		if n := tr.IdleSpares(); n != 0 {
			t.Fatalf("round %d: %d spares kept after CloseIdleConnections", i, n)
		}
	}
	waitFor(t, "the upstream to see every unused connection closed", func() bool { return len(u.unused()) == 0 })
}

// TestSpareJoinsOnlyTheTakersPartition: a spare taken by caller B is B's
// from then on: pooled under B only, never carrying another caller's
// request, whether that caller has credentials or none.
func TestSpareJoinsOnlyTheTakersPartition(t *testing.T) {
	u := startSpareUpstream(t)
	tr := spareTransport(t, 2)
	spares := warm(t, tr, u, 2)
	taken := mustAsk(t, tr, http.MethodPost, u.URL(), "Bearer B").Conn
	if !contains(spares, taken) {
		t.Fatalf("B's first request went out on connection %d, not on a spare %v", taken, spares)
	}
	callerOf := map[int]string{taken: "Bearer B"}
	for range 3 {
		for _, cred := range []string{"", "Bearer A", "Bearer first", "Bearer B", "Bearer C"} {
			r := mustAsk(t, tr, http.MethodPost, u.URL(), cred)
			if c, ok := callerOf[r.Conn]; ok && c != cred {
				t.Fatalf("connection %d carried %q and then %q", r.Conn, c, cred)
			}
			callerOf[r.Conn] = cred
		}
	}
	if callerOf[taken] != "Bearer B" {
		t.Fatalf("the spare B took carried %q afterwards, want only B", callerOf[taken])
	}
}

// TestSparesDoNotEvictPooledConnections: with the pool at MaxIdle, spares
// come on top of it; no caller's pooled connection makes way for one.
func TestSparesDoNotEvictPooledConnections(t *testing.T) {
	u := startSpareUpstream(t)
	tr := &Transport{Spares: 3, MaxIdle: 2, Partition: []string{"Authorization"}}
	t.Cleanup(tr.CloseIdleConnections)
	first := map[string]int{}
	for _, cred := range []string{"Bearer A", "Bearer B"} {
		first[cred] = mustAsk(t, tr, http.MethodPost, u.URL(), cred).Conn
	}
	waitFor(t, "3 spares", func() bool { return tr.IdleSpares() == 3 && !tr.filling() })
	if n := tr.Idle(); n != 2 {
		t.Fatalf("pool holds %d connections beside 3 spares, want 2", n)
	}
	for _, cred := range []string{"Bearer A", "Bearer B"} {
		if c := mustAsk(t, tr, http.MethodPost, u.URL(), cred).Conn; c != first[cred] {
			t.Fatalf("%s's second request went out on connection %d, not its pooled %d", cred, c, first[cred])
		}
	}
}
