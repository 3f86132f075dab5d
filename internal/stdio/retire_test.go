package stdio

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// retireGate holds the first session a Transport retires (evicted to make
// room, or idle) after it left the table and before its process is ended,
// until the test releases it: the window a request that looked the session
// up just before can fall into.
type retireGate struct {
	got     chan *session
	release chan struct{}
	once    sync.Once
}

func newRetireGate(t *testing.T) *retireGate {
	g := &retireGate{got: make(chan *session, 1), release: make(chan struct{})}
	t.Cleanup(g.open) // before the Transport's Close, which start registered first
	return g
}

func (g *retireGate) install(tr *Transport) {
	tr.retiring = func(s *session) {
		select {
		case g.got <- s:
			<-g.release
		default: // a later one goes through
		}
	}
}

func (g *retireGate) open() { g.once.Do(func() { close(g.release) }) }

// wait returns the session held at the gate.
func (g *retireGate) wait(t *testing.T) *session {
	t.Helper()
	select {
	case s := <-g.got:
		return s
	case <-time.After(hang):
		t.Fatalf("no session retired in %s", hang)
		return nil
	}
}

// answer is what an exchange made in another goroutine got.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// async runs one exchange with tr in a goroutine of its own.
func async(tr *Transport, method, sid, body string, rt func(*http.Request) (*http.Response, error)) chan answer {
	out := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, "http://stdio.invalid/mcp", strings.NewReader(body))
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if rt == nil {
			rt = tr.RoundTrip
		}
		resp, err := rt(req)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		a := answer{status: resp.StatusCode, header: resp.Header}
		a.body, a.err = io.ReadAll(resp.Body)
		out <- a
	}()
	return out
}

func await(t *testing.T, what string, ch chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		return a
	case <-time.After(hang):
		t.Fatalf("%s: no answer in %s", what, hang)
		return answer{}
	}
}

// raceRetired sends, to s held at the gate, what a client's request sends
// when it looked s up (as RoundTrip and get do) just before s was chosen:
// a GET stream, and a call the server never answers; the gate lets the
// Transport end s's process once each is either answered or open (in
// flight). Each must be answered 404 with the JSON-RPC
// error for an unknown session, so the client initializes again; the
// call must not be answered as if the process had crashed.
func raceRetired(t *testing.T, tr *Transport, g *retireGate, s *session) {
	t.Helper()
	get := async(tr, "GET", s.id, "", func(req *http.Request) (*http.Response, error) {
		return tr.getStream(req, s), nil
	})
	call := async(tr, "POST", s.id, toolCall(5, "never", nil), func(req *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(req.Body)
		msg, err := rewrite.ParseMessage(body)
		if err != nil {
			return nil, err
		}
		return tr.post(req, s.p, msg, s)
	})
	waitFor(t, "the racing GET and call to be answered or in flight", func() bool {
		n, stream := s.p.busy()
		return (stream || len(get) > 0) && (n > 0 || len(call) > 0)
	})
	g.open()
	answers := map[string]answer{"GET": await(t, "GET on the retired session", get), "POST": await(t, "POST on the retired session", call)}
	for what, a := range answers {
		if a.status != http.StatusNotFound {
			t.Errorf("%s on a retired session = %d %s, want 404", what, a.status, a.body)
			continue
		}
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(a.body, &m); err != nil {
			t.Errorf("%s body %q: %v", what, a.body, err)
			continue
		}
		// MCP's streamable HTTP servers answer an unknown session -32001
		// "Session not found"; a request's own id comes back with it.
		wantID := "null"
		if what == "POST" {
			wantID = "5"
		}
		if m.Error.Code != -32001 || m.Error.Message != "Session not found" || string(m.ID) != wantID {
			t.Errorf("%s on a retired session = %s, want error -32001 Session not found with id %s", what, a.body, wantID)
		}
	}
}

// TestEvictionRacingRequest: a request that looked its session up just
// before a new session evicted it (the caller's share is one) is answered
// 404, never a crashed process's error, and the new session works.
func TestEvictionRacingRequest(t *testing.T) {
	t.Parallel()
	g := newRetireGate(t)
	tr, m := start(t, "", func(tr *Transport) { tr.MaxProcesses = 4; g.install(tr) }) // a share of one
	a := initialize(t, tr)
	pid := pidOf(t, tr, a)
	looked := tr.session(a) // as RoundTrip looks it up
	b := async(tr, "POST", "", initReq, nil)
	if s := g.wait(t); s != looked {
		t.Fatalf("retired session %s, want %s", s.id, a)
	}
	raceRetired(t, tr, g, looked)
	ini := await(t, "the evicting initialize", b)
	sid := ini.header.Get("Mcp-Session-Id")
	if ini.status != 200 || sid == "" || sid == a {
		t.Fatalf("the evicting initialize = %d %s (session %q)", ini.status, ini.body, sid)
	}
	waitFor(t, "the evicted session's process to exit", func() bool { return !alive(pid) })
	if e := do(t, tr, "POST", sid, toolCall(6, "echo", map[string]any{"text": "hi"}), nil); text(e.last()) != "hi" {
		t.Errorf("the new session's echo = %d %v", e.status, e.msgs)
	}
	if m.event(EventEvicted) != 1 {
		t.Errorf("evicted %d, want 1", m.event(EventEvicted))
	}
}

// gateIdle is the IdleTimeout of the tests that hold a retirement at a
// gate: a session must not idle out between its initialize and the test's
// next step on it (its first call, its GET stream), so it is wider than a
// loaded machine's pauses there (at 200 ms one could take the wrong
// session to the gate).
const gateIdle = 2 * time.Second

// TestIdleEndRacingRequest: a request that looked its session up just
// before the idle timeout ended it is answered 404, never a crashed
// process's error.
//
// The session is the only one and nothing is asked of it until it is held
// at the gate, so however long a loaded machine pauses, the gate holds this
// session; its process's pid is the child's own (the test binary is the
// server), read from the session, not asked for in a call the idle timeout
// could beat.
func TestIdleEndRacingRequest(t *testing.T) {
	t.Parallel()
	g := newRetireGate(t)
	tr, _ := start(t, "", func(tr *Transport) { tr.IdleTimeout = 200 * time.Millisecond; g.install(tr) })
	a := initialize(t, tr)
	s := g.wait(t)
	if s.id != a {
		t.Fatalf("retired session %s, want %s", s.id, a)
	}
	pid := s.p.proc.cmd.Process.Pid
	if !alive(pid) {
		t.Fatalf("the held session's process %d is gone before the gate opened", pid)
	}
	raceRetired(t, tr, g, s)
	waitFor(t, "the idle session's process to exit", func() bool { return !alive(pid) })
	if e := do(t, tr, "POST", a, toolCall(7, "pid", nil), nil); e.status != 404 {
		t.Errorf("the next request on the idle-ended session = %d %v, want 404", e.status, e.msgs)
	}
}

// TestIdleEndSparesGetStream: the idle timeout ends a session with
// nothing in flight, but not one whose GET stream is open, though that one
// was used longer ago: when the later session is ended, the earlier is
// still there.
func TestIdleEndSparesGetStream(t *testing.T) {
	t.Parallel()
	g := newRetireGate(t)
	tr, _ := start(t, "", func(tr *Transport) { tr.IdleTimeout = gateIdle; g.install(tr) })
	a := initialize(t, tr)
	openGet(t, tr, a)
	b := initialize(t, tr)
	if s := g.wait(t); s.id != b {
		t.Fatalf("retired session %s, want %s (not %s, whose GET stream is open)", s.id, b, a)
	}
	if tr.session(a) == nil {
		t.Errorf("the session with a GET stream was ended with the idle one")
	}
}

// busy reports how many calls are in flight and whether a GET stream is
// open, for tests that wait on a pipe's state.
func (p *pipe) busy() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending), p.stream != nil
}

// TestConcurrentInitializeKeepsTheNewSession: two initializes from one
// caller whose share is one. The first one's session is in the table
// before its initialize is sent; the second must not evict it there (the
// first would get 404 for the session it has just been given), and is
// refused 429 over its share, as when the first's call is in flight.
func TestConcurrentInitializeKeepsTheNewSession(t *testing.T) {
	t.Parallel()
	held, release := make(chan *session, 1), make(chan struct{})
	var once sync.Once
	var holding atomic.Bool
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tr, m := start(t, "", func(tr *Transport) {
		tr.MaxProcesses = 4 // a share of one
		tr.minted = func(s *session) {
			if holding.CompareAndSwap(false, true) { // the first only
				held <- s
				<-release
			}
		}
	})
	first := async(tr, "POST", "", initReq, nil)
	select {
	case <-held:
	case <-time.After(hang):
		t.Fatalf("no session minted in %s", hang)
	}
	second := await(t, "the second initialize", async(tr, "POST", "", initReq, nil))
	if second.status != http.StatusTooManyRequests {
		t.Errorf("the second initialize = %d %s, want 429 over the caller's share", second.status, second.body)
	}
	once.Do(func() { close(release) })
	a := await(t, "the first initialize", first)
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("the first initialize = %d %s, want 200 with its session", a.status, a.body)
	}
	if e := do(t, tr, "POST", sid, toolCall(2, "echo", map[string]any{"text": "hi"}), nil); text(e.last()) != "hi" {
		t.Errorf("the first session's echo = %d %v", e.status, e.msgs)
	}
	if n := m.event(EventEvicted); n != 0 {
		t.Errorf("evicted %d, want 0", n)
	}
}
