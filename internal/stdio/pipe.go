package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// errExited is a request sent to, or waiting on, a process that has ended.
var errExited = errors.New("stdio: the upstream process has exited")

// metaSubscriptionID names, in a 2026-07-28 notification's _meta, the
// subscriptions/listen request it belongs to.
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// Queue bounds: messages waiting for a slow caller are dropped (counted)
// past these, or past MaxLine bytes (queue), or past the caller's share of
// the bytes the Transport holds for every stream (budget), so a slow
// reader never stops the process's stdout.
const (
	callQueue   = 64
	streamQueue = 256
)

// queue is the messages waiting for one stream's reader: at most cap(ch)
// of them and at most limit bytes, though an empty queue takes any one
// message, so that one as long as a line may be is never dropped for its
// length alone; and each within its caller's share of the Transport's
// budget, counted there from its put until its writer handed it over
// (sent). Only the pipe's reader puts; the stream's writer takes from ch,
// tells taken, writes the message and tells sent, and closes the queue
// when the stream ends, giving back what is left in it.
type queue struct {
	ch    chan []byte
	limit int
	who   caller.ID
	b     *budget

	mu     sync.Mutex
	bytes  int // of the messages put and not yet taken
	closed bool
}

func newQueue(n, limit int, who caller.ID, b *budget) *queue {
	return &queue{ch: make(chan []byte, n), limit: limit, who: who, b: b}
}

// put queues m; false when it is over a bound, or the queue closed, and
// dropped.
func (q *queue) put(m []byte) bool {
	n := len(m)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.ch) == cap(q.ch) || q.bytes > 0 && q.bytes+n > q.limit {
		return false
	}
	if q.b.take(q.who, n) != nil {
		return false
	}
	q.bytes += n
	q.ch <- m // room: only put sends, under mu
	return true
}

// taken is told of m, just received from ch, and returns it; the budget
// still counts it until sent.
func (q *queue) taken(m []byte) []byte {
	q.mu.Lock()
	q.bytes -= len(m)
	q.mu.Unlock()
	return m
}

// sent gives back the budget of m, a message for this stream (from ch,
// or its call's reply) that its writer handed over or let go.
func (q *queue) sent(m []byte) { q.b.give(q.who, len(m)) }

// charge counts m, the reply of this stream's call, in the budget, and
// returns it; past a bound it returns the refusal, which then stands for
// the reply (counted past any bound), and the refusal as the error.
func (q *queue) charge(id json.RawMessage, m []byte) ([]byte, error) {
	r := q.b.take(q.who, len(m))
	if r == nil {
		return m, nil
	}
	e := r.Reply()
	e.Message = "the stdio upstream's reply was dropped: " + e.Message
	return q.force(reply.ErrorMessage(id, e)), r
}

// force counts m, an error written in place of a reply, in the budget
// past any bound, and returns it.
func (q *queue) force(m []byte) []byte {
	q.b.force(q.who, len(m))
	return m
}

// close refuses every later put and gives back the budget of the
// messages left in the queue.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for {
		select {
		case m := <-q.ch:
			q.bytes -= len(m)
			q.b.give(q.who, len(m))
		default:
			return
		}
	}
}

// pipe is one process with the requests in flight on it. Every request
// written to it carries an id minted by the Transport, unique on the pipe;
// the reader maps what names it (the reply, a progressToken, a
// subscription id) back to the caller's own values. Messages that name no
// request follow route.
type pipe struct {
	t      *Transport
	proc   *process
	shared bool // the 2026-07-28 process shared by every caller

	mu      sync.Mutex
	pending map[string]*call // by the minted id's raw bytes
	tokens  map[string]*call // by the minted progress token's raw bytes
	stream  *sink            // a legacy session's GET stream; nil when none is open
	dead    bool
	retired bool // chosen to end (evicted or idle): refuses new calls and streams
	// opening: a session's process whose initialize has not yet been
	// started on it; it cannot be retired, as one with a call in flight
	// cannot, so a session minted for one initialize is never evicted by
	// another before its own call begins.
	opening bool
	started time.Time
}

// call is one request in flight on a pipe.
type call struct {
	id     json.RawMessage // the caller's raw id
	pipeID string          // the minted id, as raw JSON
	token  json.RawMessage // the caller's progressToken (shared pipe only)
	minted string          // the minted progress token, as raw JSON
	who    caller.ID
	listen bool        // subscriptions/listen: no reply expected, no timeout
	msgs   *queue      // messages for the caller before its reply, mapped back
	final  chan []byte // the reply, mapped back (capacity 1)
}

// sink is a legacy session's standalone GET stream.
type sink struct {
	msgs *queue
	done chan struct{}
}

func newPipe(t *Transport, proc *process, shared bool) *pipe {
	p := &pipe{t: t, proc: proc, shared: shared, pending: map[string]*call{}, tokens: map[string]*call{},
		started: time.Now(), opening: !shared}
	go p.read()
	go func() {
		<-proc.exited
		p.end()
	}()
	return p
}

// start writes msg, a request, to the process under a minted id and
// returns its call. On a shared pipe a progressToken is minted too, since
// two callers may have chosen the same one; on a session's own process the
// caller's token is kept, and recorded to route progress by. On a shared
// pipe the call takes a place of its caller's share of Transport.Calls
// until it leaves the pipe (drop); on a session's own process it is one
// of at most DefaultMaxSessionCalls in flight there. Past either bound
// start returns the refusal, as the *reply.Error its caller gets.
func (p *pipe) start(msg rewrite.Message, who caller.ID) (*call, error) {
	c := &call{id: msg.ID, pipeID: p.t.mint(), who: who, listen: msg.Method == "subscriptions/listen",
		msgs: newQueue(callQueue, p.t.MaxLine, who, p.t.queued), final: make(chan []byte, 1)}
	out, err := rewrite.SetKey(msg.Raw, []string{"id"}, json.RawMessage(c.pipeID))
	if err != nil {
		return nil, err
	}
	if tok, ok := rewrite.GetKey(msg.Params, []string{"_meta", "progressToken"}); ok {
		c.token, c.minted = tok, string(tok)
		if p.shared {
			c.minted = p.t.mint()
			if out, err = rewrite.SetKey(out, []string{"params", "_meta", "progressToken"}, json.RawMessage(c.minted)); err != nil {
				return nil, err
			}
		}
	}
	if p.shared {
		if err := p.t.Calls.Acquire(who, nil); err != nil {
			return nil, err.(*caller.Refusal).Reply()
		}
	}
	p.mu.Lock()
	p.opening = false
	if p.dead || p.retired {
		p.mu.Unlock()
		if p.shared {
			p.t.Calls.Release(who)
		}
		return nil, errExited
	}
	if !p.shared && len(p.pending) >= DefaultMaxSessionCalls {
		p.mu.Unlock()
		return nil, p.t.sessionCallsFull()
	}
	p.pending[c.pipeID] = c
	if c.minted != "" {
		p.tokens[c.minted] = c
	}
	p.mu.Unlock()
	if err := p.send(out); err != nil {
		if !p.forget(c) {
			c.msgs.sent(<-c.final) // the process's end answered it: not handed on
		}
		c.msgs.close()
		return nil, err
	}
	return c, nil
}

// sessionCallsFull is the refusal of a call past DefaultMaxSessionCalls
// on a session's own process, counted: a full table's (HTTP 503, data.reason
// stdio_session_calls_exhausted, data.table TableSessionCalls), the table
// being the session's calls, which its message names.
func (t *Transport) sessionCallsFull() *reply.Error {
	if t.Metrics != nil {
		t.Metrics.CallerRefusal(TableSessionCalls, true)
	}
	return caller.SessionBound(TableSessionCalls, DefaultMaxSessionCalls, "calls in flight").Reply()
}

// send writes one message as one line; a message with a newline in its
// whitespace (pretty-printed JSON) is compacted first, since the stdio
// framing forbids embedded newlines. A line cut part-way (the process
// stopped reading its stdin until the write deadline) ends the process:
// the transport allows only whole messages on its stdin, and the next one
// would be read glued to the remnant (go-sdk's StdioTransport ends its
// connection on it), so every call on it fails as in a crash.
func (p *pipe) send(msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err != nil {
			return err
		}
		msg = b.Bytes()
	}
	line := append(append(make([]byte, 0, len(msg)+1), msg...), '\n')
	if err := p.proc.write(line, time.Now().Add(p.t.RequestTimeout)); err != nil {
		if errors.Is(err, errCutMidLine) {
			p.end()
		}
		return errExited
	}
	return nil
}

// forget removes c from the pipe; false if it was no longer there (its
// reply arrived, or the pipe ended, and is in c.final).
func (p *pipe) forget(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending[c.pipeID] != c {
		return false
	}
	p.dropLocked(c)
	return true
}

// dropLocked removes c, in flight, from the pipe's tables and gives its
// place in Transport.Calls back.
func (p *pipe) dropLocked(c *call) {
	delete(p.pending, c.pipeID)
	if c.minted != "" {
		delete(p.tokens, c.minted)
	}
	if p.shared {
		p.t.Calls.Release(c.who)
	}
}

// cancel gives up on c: it is forgotten and the process is told with
// notifications/cancelled, as the transport text asks of a client whose
// request timed out. False if its reply was already in.
func (p *pipe) cancel(c *call, reason string) bool {
	if !p.forget(c) {
		return false
	}
	_ = p.send(idmap.Cancelled(json.RawMessage(c.pipeID), reason))
	return true
}

// end marks the pipe dead and answers every call in flight with an error
// at once; a caller never waits on a process that is gone.
func (p *pipe) end() {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return
	}
	p.dead = true
	calls := make([]*call, 0, len(p.pending))
	for _, c := range p.pending {
		calls = append(calls, c)
		p.dropLocked(c)
	}
	if p.stream != nil {
		close(p.stream.done)
		p.stream = nil
	}
	p.mu.Unlock()
	// The Transport forgets the process before its callers hear of its
	// end, so that their next request finds it gone.
	p.t.exited(p)
	for _, c := range calls {
		c.final <- c.msgs.force(errorReply(c.id, reply.CodeInternalError, "the stdio upstream process exited", "stdio_process_exited"))
	}
}

// isDead reports whether the pipe has ended.
func (p *pipe) isDead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// retire makes the pipe refuse new calls and GET streams, so that its
// process may be ended with nothing in flight, and reports true; with a
// call in flight (or, when streamHolds, a GET stream open) it changes
// nothing and reports false. The check and the refusal are one step under
// the pipe's lock: a request that looked the session up either started its
// call before, and the pipe is not retired, or finds it retired (404).
func (p *pipe) retire(streamHolds bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opening || len(p.pending) > 0 || streamHolds && p.stream != nil {
		return false
	}
	p.retired = true
	return true
}

// openStream registers a session's GET stream; nil when one is open, and
// gone too when the pipe has ended or is retired.
func (p *pipe) openStream(who caller.ID) (sk *sink, gone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead || p.retired {
		return nil, true
	}
	if p.stream != nil {
		return nil, false
	}
	p.stream = &sink{msgs: newQueue(streamQueue, p.t.MaxLine, who, p.t.queued), done: make(chan struct{})}
	return p.stream, false
}

func (p *pipe) closeStream(s *sink) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream == s {
		p.stream = nil
		close(s.done)
	}
}
