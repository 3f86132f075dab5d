package stdio

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Defaults for Transport fields left zero.
const (
	// DefaultMaxProcesses caps the legacy sessions' processes at once: each
	// is a real process (tens of MiB for a Node or Python server), so the
	// cap is far below the bridge's sessions.
	DefaultMaxProcesses = 32
	// DefaultMaxCalls caps the calls in flight on the process 2026-07-28
	// requests share (subscriptions/listen streams included), all callers
	// together; each caller holds at most its share of them.
	DefaultMaxCalls = 256
	// DefaultMaxSessionCalls caps the calls in flight on one legacy
	// session's process: the process is one caller's, so there is no
	// share, and as many as one caller's default share of the shared
	// process's (DefaultMaxCalls). Past it a call is refused as a full
	// table refuses, the table being TableSessionCalls.
	DefaultMaxSessionCalls = 64
	// DefaultMaxQueued caps the bytes of the messages held for callers'
	// streams and not yet handed to their readers (queued behind a slow
	// reader, or a reply waiting for one), every process together; each
	// caller holds at most its share (caller.Share: a quarter by default,
	// 16 MiB), past which its messages are dropped and its replies
	// refused. Twice the line limit (DefaultMaxLine): any one reply of
	// the longest a line may be is taken by a caller holding nothing
	// while the rest holds less than a line, and one caller that does
	// not read holds at most a line's worth however many calls it makes,
	// where each queue alone holds up to a line.
	DefaultMaxQueued = 2 * DefaultMaxLine
	// DefaultIdleTimeout ends a legacy session unused this long.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultRequestTimeout is how long a request waits for its next
	// message (its reply or anything naming it) before it is cancelled.
	DefaultRequestTimeout = 60 * time.Second
	// DefaultMaxRequestTime is the most a request may take, messages or
	// not (subscriptions/listen excepted).
	DefaultMaxRequestTime = 30 * time.Minute
	// DefaultGrace is each wait of the shutdown sequence: after stdin is
	// closed, and again after SIGTERM, before SIGKILL.
	DefaultGrace = 2 * time.Second
	// maxBody bounds a request body the adapter reads itself (a batch, a
	// message the era bridge translated); a longer one is answered 413,
	// as the proxy answers one over max-body-bytes. A body whose message
	// the proxy parsed already (rewrite.Parsed) is not read again: the
	// sidecar's own limit (max-body-bytes) bounded it.
	maxBody = 64 << 20
)

// The names of the tables the Transport's places are counted in, as a
// refusal's data.table and the metrics' table label.
const (
	// TableSessions is the legacy sessions' processes (Sessions).
	TableSessions = "stdio_sessions"
	// TableCalls is the calls in flight on the shared process (Calls).
	TableCalls = "stdio_calls"
	// TableSessionCalls is the calls in flight on one legacy session's
	// process (DefaultMaxSessionCalls).
	TableSessionCalls = "stdio_session_calls"
	// TableQueuedBytes is the bytes held for callers' streams (MaxQueued).
	TableQueuedBytes = "stdio_queued_bytes"
)

// errTooLarge is readMessage's error for a body over its limit.
var errTooLarge = errors.New("stdio: request body over the limit")

// Events counted through Metrics.StdioEvent.
const (
	EventSkippedLine    = "skipped_line"    // a stdout line that is not a JSON-RPC message
	EventLineTooLong    = "line_too_long"   // a stdout line over MaxLine
	EventDroppedMessage = "dropped_message" // a message no stream could take (a reply: replaced by a refusal)
	EventUnmatchedReply = "unmatched_reply" // a reply to no call in flight
	EventTimeout        = "timeout"         // a request cancelled after RequestTimeout
	EventRefused        = "refused"         // a session refused: every candidate busy
	EventEvicted        = "evicted"         // an idle session ended to make room for a new one
	EventStderrDropped  = "stderr_dropped"  // a stderr line over the log's budget
)

// Metrics receives what the Transport counts; package metrics implements it.
type Metrics interface {
	StdioProcesses(n int)
	StdioRestart()
	StdioEvent(event string)
	// CallerRefusal counts a refusal of a table the Transport bounds
	// itself (TableSessionCalls, TableQueuedBytes), as caller.Table
	// counts its own.
	CallerRefusal(table string, full bool)
}

// Transport is an http.RoundTripper that serves the streamable HTTP
// requests sent to it from stdio processes running Command, as the
// process's own streamable HTTP transport would answer them. Start it
// before use and Close it to end every process.
type Transport struct {
	// Command is the argv of the server; required.
	Command []string
	// Env is the child's environment; nil means ChildEnv(os.Environ()).
	Env []string
	// Logger gets the processes' stderr and their starts and ends; nil logs nothing.
	Logger *zap.Logger
	// Metrics, when set, counts processes, restarts and Events.
	Metrics Metrics
	// Caller names the caller of a request (caller.Resolver.Of); nil
	// counts every request as one caller's.
	Caller func(*http.Request) caller.ID
	// Sessions bounds the legacy sessions' processes, with each caller's
	// share; nil means a table TableSessions of MaxProcesses places
	// and the default share (caller.DefaultSharePercent), counted nowhere.
	Sessions *caller.Table
	// Calls bounds the calls in flight on the shared process, with each
	// caller's share; nil means a table TableCalls of DefaultMaxCalls
	// places and the default share, counted nowhere.
	Calls *caller.Table
	// Zero values mean the Default of each.
	MaxProcesses                                       int
	IdleTimeout, RequestTimeout, MaxRequestTime, Grace time.Duration
	// Probe is how long the era probe waits for a process's answer before
	// it gives up on that process and asks again; 0 means DefaultProbe.
	Probe time.Duration
	// MaxLine is the longest stdout line read; 0 means DefaultMaxLine.
	MaxLine int
	// MaxQueued bounds the bytes held for callers' streams, with each
	// caller's share (SharePercent, as caller.Share); 0 means
	// DefaultMaxQueued.
	MaxQueued int
	// SharePercent is the part of MaxQueued one caller may hold; 0 means
	// caller.DefaultSharePercent.
	SharePercent int

	ids    *idmap.Minter // the ids requests go to a process with
	queued *budget       // the bytes held for streams (MaxQueued)
	pids   sync.Map      // int: the processes started and not yet waited for
	stops  sync.WaitGroup
	live   atomic.Int64

	shut      atomic.Bool // Close has begun
	mu        sync.Mutex
	sessions  map[string]*session
	shared    *pipe
	failures  int       // shared process crashes in a row
	nextStart time.Time // the shared process's restart backoff
	closed    bool

	probed chan struct{} // closed once the probe decided the eras
	modern bool          // the server answered server/discover
	ready  atomic.Bool

	// retiring, set only by tests, is called with each session ended to
	// make room or for being idle, after it left the table and before its
	// process is ended; nil in production.
	retiring func(*session)
	// minted, set only by tests, is called with each session once it is
	// in the table and before its initialize is sent; nil in production.
	minted func(*session)
}

// session is a legacy client session: its own process.
type session struct {
	id   string
	who  caller.ID
	p    *pipe
	used atomic.Int64 // unix nanoseconds of the last request
}

// Start fills defaults, probes the server once (server/discover, then
// initialize) in a process of its own, and ends idle sessions until ctx ends.
func (t *Transport) Start(ctx context.Context) {
	t.defaults()
	go t.probe(ctx)
	go t.reapIdle(ctx)
}

func (t *Transport) defaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.IdleTimeout, DefaultIdleTimeout)
	def(&t.RequestTimeout, DefaultRequestTimeout)
	def(&t.MaxRequestTime, DefaultMaxRequestTime)
	def(&t.Grace, DefaultGrace)
	def(&t.Probe, DefaultProbe)
	if t.MaxProcesses <= 0 {
		t.MaxProcesses = DefaultMaxProcesses
	}
	if t.MaxLine <= 0 {
		t.MaxLine = DefaultMaxLine
	}
	if t.Env == nil {
		t.Env = ChildEnv(os.Environ())
	}
	if t.Logger == nil {
		t.Logger = zap.NewNop()
	}
	if t.MaxQueued <= 0 {
		t.MaxQueued = DefaultMaxQueued
	}
	t.queued = newBudget(t.MaxQueued, t.SharePercent, func(full bool) {
		if t.Metrics != nil {
			t.Metrics.CallerRefusal(TableQueuedBytes, full)
		}
	})
	t.ids = idmap.NewMinter("stdio")
	if t.Sessions == nil {
		t.Sessions = caller.NewTable(caller.TableOptions{Name: TableSessions, Cap: t.MaxProcesses})
	}
	if t.Calls == nil {
		t.Calls = caller.NewTable(caller.TableOptions{Name: TableCalls, Cap: DefaultMaxCalls})
	}
	t.sessions = map[string]*session{}
	t.probed = make(chan struct{})
}

// Owns reports whether pid is a process the Transport started and has not
// yet waited for: a reaper of orphans (the sidecar as PID 1) leaves it alone.
func (t *Transport) Owns(pid int) bool {
	_, ok := t.pids.Load(pid)
	return ok
}

// Ready reports whether a process has answered its handshake.
func (t *Transport) Ready() bool { return t.ready.Load() }

// mint returns a fresh id for the pipe, as raw JSON: a string no caller
// chose, so a reply can be told apart from anything else in a line.
func (t *Transport) mint() string { return string(t.ids.Next()) }

func (t *Transport) event(e string) {
	if t.Metrics != nil {
		t.Metrics.StdioEvent(e)
	}
}

// spawn starts a process and its pipe.
func (t *Transport) spawn(role string, shared bool) (*pipe, error) {
	if t.shut.Load() {
		return nil, errExited // Close has run: nothing would end a new process
	}
	proc, err := startProcess(t.Command, t.Env, t.Logger, role, func() { t.event(EventStderrDropped) })
	if err != nil {
		return nil, err
	}
	t.pids.Store(proc.pgid, true)
	t.count(1)
	t.Logger.Debug("stdio upstream started", zap.String("process", role), zap.Int("pid", proc.pgid))
	return newPipe(t, proc, shared), nil
}

func (t *Transport) count(d int64) {
	n := t.live.Add(d)
	if t.Metrics != nil {
		t.Metrics.StdioProcesses(int(n))
	}
}

// exited is told by a pipe that it ended: its process is stopped (the
// rest of the group too), and a crashed shared process is forgotten so
// the next request starts another, after a backoff.
func (t *Transport) exited(p *pipe) {
	t.stops.Add(1)
	go func() {
		defer t.stops.Done()
		p.proc.stop(t.Grace)
		t.pids.Delete(p.proc.pgid)
		t.count(-1)
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shared == p {
		t.shared = nil
		if time.Since(p.started) > time.Minute {
			t.failures = 0
		}
		t.failures++
		t.nextStart = time.Now().Add(backoff(t.failures))
		if t.Metrics != nil {
			t.Metrics.StdioRestart()
		}
	}
}

// backoff is the wait before the n-th restart in a row: 100ms doubling, at most 30s.
func backoff(n int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// Close ends every process (stdin closed, SIGTERM, SIGKILL) and returns
// once each was waited for.
func (t *Transport) Close() error {
	t.shut.Store(true)
	t.mu.Lock()
	t.closed = true
	var pipes []*pipe
	for _, s := range t.sessions {
		pipes = append(pipes, s.p)
		t.dropLocked(s)
	}
	if t.shared != nil {
		pipes = append(pipes, t.shared)
	}
	t.mu.Unlock()
	for _, p := range pipes {
		p.end()
	}
	t.stops.Wait()
	return nil
}

// RoundTrip answers req as the server's streamable HTTP transport would.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	sid := req.Header.Get("Mcp-Session-Id")
	switch req.Method {
	case http.MethodGet:
		return t.get(req, sid), nil
	case http.MethodDelete:
		return t.delete(req, sid), nil
	case http.MethodPost:
	default:
		return respond(req, http.StatusMethodNotAllowed, nil, errorReply(nil, reply.CodeInvalidRequest, "method not allowed", "")), nil
	}
	msg, ok, err := readMessage(req, maxBody)
	if errors.Is(err, errTooLarge) {
		e := reply.TooLarge(maxBody)
		return respond(req, e.Status, nil, reply.ErrorMessage(nil, e)), nil
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return respond(req, http.StatusBadRequest, nil, errorReply(msg.ID, reply.CodeInvalidRequest, "not a JSON-RPC message", "")), nil
	}
	if sid != "" {
		s := t.session(sid)
		if s == nil {
			return notFound(req, msg.ID), nil
		}
		return t.post(req, s.p, msg, s)
	}
	if msg.Kind == rewrite.KindRequest && msg.Method == "initialize" {
		return t.initialize(req, msg)
	}
	if !t.waitModern(req.Context()) {
		// What a legacy server's HTTP transport answers a request outside
		// any session.
		return respond(req, http.StatusBadRequest, nil, errorReply(msg.ID, reply.CodeInvalidRequest, "Bad Request: no valid session ID; send initialize first", "")), nil
	}
	p, err := t.sharedPipe(req.Context())
	if err != nil {
		return respond(req, http.StatusServiceUnavailable, nil, errorReply(msg.ID, reply.CodeInternalError, "the stdio upstream could not be started", "stdio_unavailable")), nil
	}
	return t.post(req, p, msg, nil)
}

// readMessage reads the message of a POST's body and closes the body:
// the message the proxy parsed already (rewrite.Parsed), or else the body
// read and parsed. ok is false when the body holds no message, which then
// still carries the id when one was found, for the error reply; err is a
// failure to read the body, errTooLarge for a body over limit bytes.
func readMessage(req *http.Request, limit int64) (m rewrite.Message, ok bool, err error) {
	if req.Body == nil {
		return rewrite.Message{}, false, nil
	}
	defer req.Body.Close()
	if m, ok := rewrite.MessageOf(req.Body); ok {
		return m, true, nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	if err != nil {
		return rewrite.Message{}, false, err
	}
	if int64(len(body)) > limit {
		return rewrite.Message{}, false, errTooLarge
	}
	m, perr := rewrite.ParseMessage(body)
	return m, perr == nil, nil
}

// session returns the live session sid, or nil: unknown, ended, or its
// process gone (the client then re-initializes, as after a server restart).
func (t *Transport) session(sid string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions[sid]
	if s == nil {
		return nil
	}
	if s.p.isDead() {
		t.dropLocked(s)
		return nil
	}
	s.used.Store(time.Now().UnixNano())
	return s
}

func (t *Transport) dropLocked(s *session) {
	if t.sessions[s.id] != s {
		return
	}
	delete(t.sessions, s.id)
	t.Sessions.Release(s.who)
}

// endSession forgets s and ends its process.
func (t *Transport) endSession(s *session) {
	t.mu.Lock()
	t.dropLocked(s)
	t.mu.Unlock()
	s.p.end()
}

func (t *Transport) callerOf(req *http.Request) caller.ID {
	if t.Caller == nil {
		return caller.ID{}
	}
	return t.Caller(req)
}

// initialize starts a legacy session: a process of its own, under a
// session id the Transport mints, within the Sessions table and the
// caller's share of it. Past either, the least recently used idle session
// (the caller's own, past its share) makes room; a session with a request
// in flight is never ended, nor one minted for an initialize not yet sent
// (pipe.opening), so when every candidate has one the caller is refused
// (caller.Refusal: 429 over its share, 503 when full). The session ends if
// the server refuses the initialize.
func (t *Transport) initialize(req *http.Request, msg rewrite.Message) (*http.Response, error) {
	who := t.callerOf(req)
	err := t.Sessions.Acquire(who, func(own bool) bool {
		t.mu.Lock()
		v := t.retireIdlestLocked(func(s *session) bool { return !own || s.who == who })
		if v != nil {
			t.dropLocked(v)
		}
		t.mu.Unlock()
		if v == nil {
			return false
		}
		t.event(EventEvicted)
		t.endRetired(v) // its client's next request gets 404 and it initializes again
		return true
	})
	var refusal *caller.Refusal
	if errors.As(err, &refusal) {
		t.event(EventRefused)
		return refused(req, msg.ID, refusal.Reply()), nil
	}
	p, err := t.spawn("session", false)
	s := &session{id: newSessionID(), who: who, p: p}
	s.used.Store(time.Now().UnixNano())
	t.mu.Lock()
	if err == nil && t.closed {
		err = errExited // Close ran while it started: it is ours to end
		defer p.end()
	}
	if err == nil {
		t.sessions[s.id] = s
	} else {
		t.Sessions.Release(who)
	}
	t.mu.Unlock()
	if err != nil {
		t.Logger.Warn("stdio upstream did not start", zap.Error(err))
		return respond(req, http.StatusServiceUnavailable, nil, errorReply(msg.ID, reply.CodeInternalError, "the stdio upstream could not be started", "stdio_unavailable")), nil
	}
	if t.minted != nil {
		t.minted(s)
	}
	hdr := http.Header{"Mcp-Session-Id": {s.id}}
	return t.call(req, p, msg, s, hdr, func(final []byte) {
		if m, err := rewrite.ParseMessage(final); err != nil || m.Kind != rewrite.KindResponse {
			t.endSession(s)
		} else {
			t.ready.Store(true)
		}
	})
}

// refused is a table's refusal as a reply: its status, Retry-After and
// JSON-RPC error with the caller's id.
func refused(req *http.Request, id json.RawMessage, e *reply.Error) *http.Response {
	body := reply.ErrorMessage(id, e)
	var h http.Header
	if e.RetryAfter > 0 {
		h = http.Header{"Retry-After": {strconv.Itoa(e.RetryAfter)}}
	}
	return respond(req, e.Status, h, body)
}

// retireIdlestLocked retires (pipe.retire) and returns the session pick
// accepts with nothing in flight that was least recently used; nil when
// every one has a request in flight. A GET stream alone does not hold a
// session: many clients open one after initialize and never close it, and
// its end tells the client to reconnect (then 404: initialize). It does
// not make a session a later victim either: preferring sessions without
// one made a session just initialized, whose client had not opened its
// stream yet, the first to go.
func (t *Transport) retireIdlestLocked(pick func(*session) bool) *session {
	type candidate struct {
		s    *session
		used int64
	}
	var cs []candidate
	for _, s := range t.sessions {
		if pick(s) {
			cs = append(cs, candidate{s, s.used.Load()})
		}
	}
	slices.SortFunc(cs, func(a, b candidate) int { return cmp.Compare(a.used, b.used) })
	for _, c := range cs {
		if c.s.p.retire(false) {
			return c.s
		}
	}
	return nil
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// post carries one message on p: a request is a call; a notification or a
// client's reply to a server request is written and answered 202.
func (t *Transport) post(req *http.Request, p *pipe, msg rewrite.Message, s *session) (*http.Response, error) {
	switch msg.Kind {
	case rewrite.KindRequest:
		return t.call(req, p, msg, s, nil, nil)
	case rewrite.KindNotification:
		out := msg.Raw
		if msg.Method == "notifications/cancelled" {
			var ok bool
			if out, ok = p.cancelled(msg, t.callerOf(req)); !ok {
				return respond(req, http.StatusAccepted, nil, nil), nil // names nothing in flight
			}
		}
		if err := p.send(out); err != nil && s != nil {
			return notFound(req, nil), nil
		}
	default:
		if p.shared {
			break // the shared process sends no requests a client answers
		}
		if err := p.send(msg.Raw); err != nil {
			return notFound(req, nil), nil
		}
	}
	return respond(req, http.StatusAccepted, nil, nil), nil
}

// waitModern waits for the probe and reports whether the server answered
// server/discover.
func (t *Transport) waitModern(ctx context.Context) bool {
	select {
	case <-t.probed:
		return t.modern
	case <-ctx.Done():
		return false
	}
}

// sharedPipe returns the shared process, starting it (after the restart
// backoff, if it crashed) when there is none.
func (t *Transport) sharedPipe(ctx context.Context) (*pipe, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, errExited
		}
		if t.shared != nil && !t.shared.isDead() {
			p := t.shared
			t.mu.Unlock()
			return p, nil
		}
		wait := time.Until(t.nextStart)
		if wait <= 0 {
			p, err := t.spawn("shared", true)
			if err == nil {
				t.shared = p
			} else {
				t.failures++
				t.nextStart = time.Now().Add(backoff(t.failures))
			}
			t.mu.Unlock()
			return p, err
		}
		t.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// reapIdle ends legacy sessions with nothing in flight, no GET stream and
// no request for IdleTimeout.
func (t *Transport) reapIdle(ctx context.Context) {
	tick := time.NewTicker(min(t.IdleTimeout/4, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cutoff := time.Now().Add(-t.IdleTimeout).UnixNano()
		t.mu.Lock()
		var idle []*session
		for _, s := range t.sessions {
			if s.used.Load() < cutoff && s.p.retire(true) {
				idle = append(idle, s)
			}
		}
		for _, s := range idle {
			t.dropLocked(s)
		}
		t.mu.Unlock()
		for _, s := range idle {
			t.endRetired(s)
		}
	}
}

// endRetired ends the process of s, a session evicted or idle that has
// left the table.
func (t *Transport) endRetired(s *session) {
	if t.retiring != nil {
		t.retiring(s)
	}
	s.p.end()
}
