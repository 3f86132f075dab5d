// Package hop owns the sidecar's connections to its upstream: an HTTP/1.1
// round tripper over a pool of keep-alive connections that does each round
// trip on the caller's goroutine.
//
// net/http's Transport gives every connection a read goroutine and a write
// goroutine and hands each request and reply between them and the caller
// over channels. On a busy two-core pod each hand-off is a scheduler wake-up,
// and a proxy pays them on top of the server's own; that is most of what a
// default Go reverse proxy adds to a loopback round trip. Here the caller
// writes the request and reads the reply itself, the way nginx's event loop
// does, and a connection in the pool costs no goroutine at all. Only a
// request whose body is streamed (write.go) is written on a goroutine of
// its own, which goes on behind an upstream's early 2xx answer while the
// caller reads it.
//
// A pooled connection carries nothing but replies to requests it was asked:
// one on which the upstream wrote anything unasked (a second response, a
// body longer than its Content-Length, a stray byte) or that it closed is
// never reused. Every reuse is preceded by a non-blocking peek, as nginx's
// keepalive module and net/http's read goroutine watch an idle connection;
// bytes that arrive after the next request went out cannot be told from its
// reply in HTTP/1.1, by this package or by them. So that such a reply can
// never reach another caller, the pool is partitioned by the caller's
// credentials (Transport.Partition): a connection that carried one
// caller's request never carries another's.
//
// Partitioning means a new caller finds nothing pooled and dials on its
// critical path, once for each of its first concurrent requests. Spares
// (Transport.Spares) take the dial off that path: a few connections per
// upstream address, dialled ahead in the background once a request has
// gone to the address, that have never carried a request. Such a
// connection has held nobody's reply, so it belongs to no partition and
// may go to any: a request that finds nothing pooled under its key takes
// one (after the same peek as a pooled connection; a spare the upstream
// closed, half-closed or wrote on is closed instead), and from then on it
// is that partition's, pooled under its key only, like a connection the
// request had dialled itself. Every miss asks for a refill: one goroutine
// per address, one dial at a time, stopping at the first failure. Spares
// are kept only for an address whose connections have gone back to the
// pool after a reply (an upstream that closes after each reply, or serves
// one connection at a time, would have a worker sit on an idle spare and
// gains nothing from one), and refills of an address pause for IdleTimeout
// once one of its spares is found dead when taken (an upstream that closes
// idle connections sooner than spares wait). A spare
// counts as reused for the retry rule, expires after IdleTimeout, and is
// not counted in MaxIdle, so it never evicts a pooled connection; there are
// at most Spares per address. A pooled reuse never touches the spares.
//
// A plain request (write.go: a body of known length up to 64 KiB, no
// trailers, no field net/http's writer would alter) is written by this
// package, head and body in one write from a pooled buffer, as nginx sends
// a buffered request; anything else goes through net/http's request
// writer, which streams its body. A plain reply's head (read.go: HTTP/1.x,
// CRLF lines, a status with a body, one decimal Content-Length or, in
// HTTP/1.1, "Transfer-Encoding: chunked" as an SSE reply has) is parsed by
// this package too, into the response net/http's reader would make, a
// chunked body decoded by net/http's own decoder; any other head (read to
// the close, 1xx, 204, 304, a reply to HEAD, anything net/http would
// refuse or read leniently) goes, unread, to http.ReadResponse. A caller
// done with a plain reply may give its header map back (Release), for a
// later reply's fields.
//
// The Transport speaks plain http:// only; anything else (https, protocol
// upgrades) goes to its Fallback, partitioned as the pool is when it is
// net/http's Transport (fallback.go): one clone of it per partition.
package hop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
	"github.com/skills-sidecar/skills-sidecar/internal/rawsock"
	"github.com/skills-sidecar/skills-sidecar/internal/slotctx"
)

// Defaults for Transport fields left zero.
const (
	DefaultDialTimeout = 5 * time.Second
	DefaultIdleTimeout = 90 * time.Second
	DefaultMaxIdle     = 512
)

// Transport is an http.RoundTripper for plain-HTTP upstreams. The zero value
// is ready to use; fields must not change after the first round trip.
type Transport struct {
	// DialTimeout bounds connecting; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers, counted
	// from the start of the request's last write (so that nothing between
	// the write and the read can stretch it); 0 means no limit.
	ResponseHeaderTimeout time.Duration
	// IdleTimeout closes a pooled connection unused this long; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxIdle caps the pooled connections (per Transport, all hosts); 0
	// means DefaultMaxIdle.
	MaxIdle int
	// Fallback carries what this Transport does not: https and requests
	// asking for a protocol upgrade. Nil refuses them. When it is
	// net/http's Transport and Partition is set it is a template: each
	// partition's requests go through a clone of it of their own (at most
	// FallbackPartitions, the least recently used evicted), so that they
	// never share a connection either; any other RoundTripper carries
	// every request itself.
	Fallback http.RoundTripper
	// Partition names the request headers (credentials: Authorization,
	// Cookie) whose values partition the pool: requests that differ in any
	// of them never share a connection, the Fallback's included. Nil shares connections between
	// every request to the same host.
	Partition []string
	// Spares is how many connections per upstream address are kept dialled
	// ahead and never used, for a request that finds no pooled connection
	// of its partition (a new caller's first requests); 0 keeps none. They
	// are dialled only for an address a request has gone to, are not
	// counted in MaxIdle, and close after IdleTimeout unused.
	Spares int

	mu     sync.Mutex
	idle   map[string][]*conn   // by pool key; most recently used last
	n      int                  // pooled connections over all keys
	spares map[string]*spareSet // by address; see spares.go
	// keptAlive are the addresses whose connections have gone back to the
	// pool after a reply (the upstream keeps connections open), and
	// paused when refills of an address may start again after one of its
	// spares was found dead; see spares.go.
	keptAlive map[string]bool
	paused    map[string]time.Time
	dials     atomic.Int64 // connections dialled, for tests
	// fallbacks are the Fallback's clones by partition (fallback.go),
	// fbClock their use count, both guarded by fbMu.
	fbMu      sync.Mutex
	fallbacks map[string]*fallbackEntry
	fbClock   uint64
	// wrote, when set (by tests), runs between a request's write and the
	// read of its reply: where a busy machine may stall the round trip.
	wrote func()
	// restWait, when set (by tests), is how long a reply read whole waits
	// for the write of its request behind it; zero: restWait.
	restWait time.Duration

	// headers holds header maps Release gave back, cleared, for the
	// replies read next.
	headers sync.Pool
}

// conn is one upstream connection. Only the goroutine doing a round trip
// on it touches br; the pool's fields are guarded by Transport.mu.
type conn struct {
	nc     net.Conn
	w      io.Writer  // nc's writes, raw where rawsock serves it (its reads are under lim)
	lim    *headLimit // under br: bounds a response head
	br     *bufio.Reader
	peek   *peeker // alive's peek, made once at dial
	key    string  // the pool key: host:port, and the partition's hash
	addr   string  // host:port
	reused bool
	// refused: the last watch of a request's write (watchAnswer) saw the
	// upstream refuse the request or hang up; such a connection is never
	// reused, so a later request never finds it set.
	refused bool
	// headSet is when the read deadline of ResponseHeaderTimeout in force
	// was set; zero: none is.
	headSet time.Time

	pooled bool        // in Transport.idle
	spare  bool        // in a spareSet: dialled, never used, in no partition
	since  time.Time   // when it entered the pool
	timer  *time.Timer // closes it after IdleTimeout in the pool or as a spare
	// due: the timer will fire. A pooled connection's is left running
	// while the connection carries a request, and put off when it fires
	// early (expire); guarded by Transport.mu.
	due bool

	// closer closes nc: made once, at dial, for every round trip's
	// AfterFunc, where a closure per request cost an allocation. On a
	// context that registers by slot (the sidecar's server's requests),
	// unslot, made once too, is the round trip's stop: it unregisters
	// closer from reg's slot regSlot, where the stop function a context
	// hands out cost another allocation per request.
	closer  func()
	unslot  func() bool
	reg     slotctx.SlotAfterFuncer
	regSlot int
	// slot is the room of the idle list this connection emptied when it
	// was taken from the pool (len 0, owned by nobody else), for put to
	// refill instead of allocating a list of one per round trip.
	slot []*conn
}

// readBuffer is a connection's read buffer. A connection keeps it for life,
// through every idle stream it carries, so it is small: response heads are
// a few hundred bytes (longer header lines are read in pieces), and a read
// larger than the buffer bypasses it.
const readBuffer = 2 << 10

// Carries reports whether a Transport carries req itself rather than
// handing it to its Fallback: a plain http:// request that asks for no
// protocol upgrade. What it carries itself it is done with, header map
// included, once the reply's body is closed (or on an error), which the
// Fallback (net/http's Transport, whose writer may still run after it
// returns a reply) does not promise.
func Carries(req *http.Request) bool {
	return req.URL.Scheme == "http" && req.Header.Get("Upgrade") == ""
}

// RoundTrip implements http.RoundTripper. A request on a reused connection
// that fails before the upstream could have acted on it (nothing written,
// or, for a replayable request, nothing read back) is retried once on a
// fresh connection, as net/http does, its body from GetBody or, without
// one, from the bytes of a body in memory (MemBytes).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !Carries(req) {
		if t.Fallback == nil {
			closeBody(req)
			return nil, fmt.Errorf("hop: cannot carry a %s request", req.URL.Scheme) // no URL: its query may hold a secret
		}
		return t.fallback(req).RoundTrip(req)
	}
	ctx := req.Context()
	addr := hostPort(req)
	key := t.poolKey(addr, req)
	mem, inMem := MemBytes(req)
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			closeBody(req)
			return nil, err
		}
		// A retry goes out on a pooled connection or a fresh one, never on
		// a spare: the first attempt's dead connection was most likely one
		// the upstream closed for idling, and a spare has idled longer than
		// any pooled one of the partition; a dial cannot be stale.
		c, err := t.get(ctx, addr, key, attempt == 0)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, wrote, err := t.roundTrip(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		retry := attempt == 0 && c.reused && ctx.Err() == nil && (rewindable(req) || inMem) &&
			!errors.Is(err, errBodyLength) && !errors.Is(err, errRequest) &&
			(!wrote || (replayable(req) && errors.Is(err, io.EOF)))
		if !retry {
			closeBody(req)
			return nil, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			var body io.ReadCloser
			if req.GetBody != nil {
				if body, err = req.GetBody(); err != nil {
					return nil, err
				}
			} else {
				body = io.NopCloser(bytes.NewReader(mem))
			}
			req = req.Clone(ctx)
			req.Body = body
		}
	}
}

// roundTrip writes req on c and reads the reply's headers. It reports
// whether any byte of the request went out. On error c is closed.
func (t *Transport) roundTrip(ctx context.Context, c *conn, req *http.Request) (*http.Response, bool, error) {
	// Cancelling the request closes the connection, which unblocks a write
	// or read in progress; the connection is never reused after that.
	stop := c.afterFunc(ctx)
	fail := func(wrote bool, err error) (*http.Response, bool, error) {
		stop()
		c.drop()
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return nil, wrote, err
	}

	n, sent, rest, err := writeRequest(c.w, req, c)
	if t.wrote != nil {
		t.wrote()
	}
	if rest != nil {
		// The upstream answered, and refused nothing, while the request
		// was still going out: its reply is read while the rest is
		// written behind it.
		resp, err := t.readResponse(c, req, time.Now())
		if err != nil {
			c.drop()
			<-rest.done
			return fail(true, err)
		}
		return t.finish(c, req, resp, stop, rest), true, nil
	}
	if err != nil {
		werr := fmt.Errorf("hop: write request: %w", err)
		// The watch (errAnswered) may have stopped the write before its
		// first byte, the upstream having hung up already: its read below
		// says so, not the watch's deadline.
		answered := errors.Is(err, errAnswered)
		if !answered && n == 0 || ctx.Err() != nil || errors.Is(err, errRequest) {
			// Nothing went out, the caller left, or the request itself
			// failed part-way (its body): no answer is coming.
			return fail(n > 0, werr)
		}
		// The upstream stopped taking the request part-way. It may have
		// answered first (a 401 or 413 before reading a large body, then
		// a close): that answer is the reply, as net/http's Transport
		// returns a response that arrives while the body is still being
		// written and nginx reads an upstream's early header. Without an
		// answer the write error stands, but for one the watch stopped:
		// its error is the watch's own deadline. Either way the connection
		// is never reused: the upstream did not read the whole request.
		// The wait for the answer counts from now: the write that failed
		// may have been blocked for longer than ResponseHeaderTimeout,
		// with the answer arrived meanwhile.
		resp, rerr := t.readResponse(c, req, time.Now())
		if rerr != nil {
			if answered {
				// The upstream hung up on the request, without a word or
				// with a head cut short, as the write alone would have
				// found out: the read's error stands, not the watch's
				// deadline (an "i/o timeout"), and allows a retry where
				// one is safe.
				return fail(n > 0, rerr)
			}
			return fail(n > 0, werr)
		}
		resp.Close = true
		return t.finish(c, req, resp, stop, nil), true, nil
	}
	resp, err := t.readResponse(c, req, sent)
	if err != nil {
		return fail(true, err)
	}
	if c.refused {
		// The upstream refused the request (or hung up) while it was
		// still going out, and the write ended before the watch could
		// stop it: whether the upstream read the rest, or left it in the
		// socket's buffers unread, is unknown, so the connection is not
		// reused, as when the write was stopped.
		resp.Close = true
	}
	return t.finish(c, req, resp, stop, nil), true, nil
}

// watchAnswer is conn's answerWatcher: its peeker's watch of nc, with
// no read deadline in force (one ResponseHeaderTimeout left from the last
// reply would end the watch), as the watch's stop leaves it. Its stop
// notes in c.refused whether the watch saw the upstream refuse the request
// or hang up.
func (c *conn) watchAnswer() (func() bool, <-chan struct{}) {
	if !c.headSet.IsZero() {
		c.clearHeadDeadline()
	}
	stop, ended := c.peek.watch(c.nc, c.lim)
	return func() bool {
		c.refused = stop()
		return c.refused
	}, ended
}

// cut closes c's connection, for a write behind its reply that failed.
func (c *conn) cut() { c.nc.Close() }

// aLongTimeAgo is a deadline in the past, to stop a blocked read or write
// at once.
var aLongTimeAgo = time.Unix(1, 0)

// afterFuncer is a context that registers a function to run when it is
// done by itself: the context package's own hook for such a parent.
type afterFuncer interface {
	AfterFunc(func()) func() bool
}

// afterFunc is context.AfterFunc, registered directly on a context that
// has an AfterFunc method of its own (the sidecar's server gives its
// requests one): context.AfterFunc would wrap it in a cancelCtx of its
// own first, three allocations more.
func afterFunc(ctx context.Context, f func()) func() bool {
	if a, ok := ctx.(afterFuncer); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// afterFunc registers c's closer on ctx for one round trip and returns
// its stop: c's own unslot where ctx registers by slot, else afterFunc's.
// The stop is called once, before c carries another request.
func (c *conn) afterFunc(ctx context.Context) func() bool {
	if a, ok := ctx.(slotctx.SlotAfterFuncer); ok {
		if slot, ok := a.AfterFuncSlot(c.closer); ok {
			c.reg, c.regSlot = a, slot
			return c.unslot
		}
	}
	return afterFunc(ctx, c.closer)
}

// readResponse reads the final reply's head from c, skipping interim
// replies, within ResponseHeaderTimeout of sent, when the request's last
// write began. The deadline counts from there, not from now: a goroutine
// that stalls after the write (a busy machine) must not give a late reply
// the time it lost.
//
// The deadline is moved lazily (package lazydeadline), so a head gets at
// least fifteen sixteenths of the timeout. It stays in force after a reply
// whose body came whole with its head, since reading that body waits on
// nothing; any other reply's body reads without it. Each move costs a lock
// and a timer update in the runtime's poller, and a call on a busy
// connection paid two.
func (t *Transport) readResponse(c *conn, req *http.Request, sent time.Time) (*http.Response, error) {
	if d := t.ResponseHeaderTimeout; d > 0 && lazydeadline.Due(c.headSet, sent, d) {
		c.nc.SetReadDeadline(sent.Add(d))
		c.headSet = sent
	}
	// What br holds already was read under an earlier bound (or is the
	// start of this head); the rest of the head may take what is left of
	// MaxResponseHead. The body reads without a bound.
	c.lim.n = max(MaxResponseHead-int64(c.br.Buffered()), 0)
	defer func() { c.lim.n = -1 }()
	spare, _ := t.headers.Get().(http.Header) // a header map Release gave back
	defer func() {
		if spare != nil {
			t.headers.Put(spare) // not taken: still empty
		}
	}()
	for {
		// Peek first: ReadResponse turns a hang-up before the first byte
		// into ErrUnexpectedEOF, and only a clean io.EOF says the upstream
		// read nothing back, which may allow a retry.
		_, err := c.br.Peek(1)
		var resp *http.Response
		if err == nil {
			resp, err = readHeadInto(c.br, req, &spare)
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return nil, fmt.Errorf("hop: timeout awaiting response headers: %w", err)
			}
			return nil, fmt.Errorf("hop: read response: %w", err)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("hop: unexpected 101 Switching Protocols")
		}
		// Interim replies (100 Continue, 103 Early Hints) are not the answer.
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			if !c.headSet.IsZero() && !bodyBuffered(resp, c.br) {
				c.clearHeadDeadline()
			}
			return resp, nil
		}
	}
}

// bodyBuffered reports whether the whole body of resp is in br already
// (none at all included), so that reading it waits on nothing.
func bodyBuffered(resp *http.Response, br *bufio.Reader) bool {
	return resp.Body == http.NoBody || resp.ContentLength == 0 ||
		resp.ContentLength > 0 && int64(br.Buffered()) >= resp.ContentLength
}

// clearHeadDeadline lifts the deadline of ResponseHeaderTimeout.
func (c *conn) clearHeadDeadline() {
	c.nc.SetReadDeadline(time.Time{})
	c.headSet = time.Time{}
}

// finish hands resp's body the connection, which goes back to the pool
// when the body has been read whole (at once for a reply without one) and
// the write of the request behind it, rest if not nil, is over.
func (t *Transport) finish(c *conn, req *http.Request, resp *http.Response, stop func() bool, rest *bodyWrite) *http.Response {
	keep := !resp.Close && !req.Close
	chunked := len(resp.TransferEncoding) > 0
	if resp.Body == http.NoBody {
		t.release(c, stop, keep, rest)
		return resp
	}
	if b, ok := resp.Body.(plainBody); ok {
		if w := b.takeWrap(); w != nil {
			// A reply read by plainResponse brought room for the wrapper.
			w.rc, w.t, w.c, w.stop, w.keep, w.reply, w.chunked, w.rest = resp.Body, t, c, stop, keep, resp, chunked, rest
			resp.Body = w
			return resp
		}
	}
	resp.Body = &body{rc: resp.Body, t: t, c: c, stop: stop, keep: keep, chunked: chunked, rest: rest}
	return resp
}

// restWait is how long a reply read whole waits for the write of its
// request behind it to end before its connection is closed instead of
// pooled: net/http's Transport waits as long (maxWriteWaitBeforeConnReuse)
// for its writer to report before it reuses a connection. An upstream that
// answers whole before it has read the whole request may never read the
// rest.
const restWait = 50 * time.Millisecond

// release ends a round trip on c: back to the pool when the reply was read
// whole, both sides allow it, and the request's write behind the reply,
// rest if not nil, ended whole; closed otherwise, which ends that write,
// waited for so that nothing of the round trip runs on.
func (t *Transport) release(c *conn, stop func() bool, keep bool, rest *bodyWrite) {
	if rest != nil {
		wait := t.restWait
		if wait == 0 {
			wait = restWait
		}
		keep = keep && rest.wait(wait) == nil
		if !keep {
			c.drop()
			<-rest.done
		}
	}
	if !stop() || !keep {
		// The context fired (and closed the connection) or a side asked to close.
		c.drop()
		return
	}
	t.put(c)
}

// body is a reply body that gives its connection back on EOF.
type body struct {
	rc   io.ReadCloser
	t    *Transport
	c    *conn
	stop func() bool
	keep bool
	// chunked: the body is chunked, and Buffered cannot tell data from
	// framing.
	chunked bool
	// rest: the request's write that goes on behind this reply, or nil.
	rest *bodyWrite

	mu    sync.Mutex
	done  bool
	reply *http.Response // the plain reply it is the body of, until Release

	// closed: Close was called; every later read fails, as net/http's
	// reply bodies do, instead of returning what was left of the reply.
	closed atomic.Bool
}

// errReadAfterClose is what a read of a body after its Close returns,
// in the words of net/http's Transport.
var errReadAfterClose = errors.New("http: read on closed response body")

// maxReleased bounds the header maps Release keeps: one grown by an
// unusual reply is left to the collector.
const maxReleased = 32

// Release gives the header map of resp back to the Transport that read
// it, for a later reply's header, and sets resp.Header to nil. It is for
// a caller done with resp, its body closed or read to its end, that keeps
// no reference to the map: the map is cleared and refilled by a reply to
// some other request. The values' slices are not reused, so a caller that
// copied them (as a proxy does into its own reply's header) may keep
// those. Any other response (one this package did not parse itself, one
// whose body was replaced or is still open, one released already) is left
// as it is.
func Release(resp *http.Response) {
	b, ok := resp.Body.(*body)
	if !ok {
		return
	}
	b.mu.Lock()
	if !b.done || b.reply != resp {
		b.mu.Unlock()
		return
	}
	b.reply = nil
	b.mu.Unlock()
	h := resp.Header
	resp.Header = nil
	if h == nil || len(h) > maxReleased {
		return
	}
	clear(h)
	b.t.headers.Put(h)
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errReadAfterClose
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		if b.rest != nil {
			err = b.rest.readErr(err)
		}
		b.finish(false)
	}
	return n, err
}

// Buffered reports how many bytes of the body a read returns at once,
// without waiting for the upstream, so a relay can tell whether to flush
// what it has before reading on. For a chunked body it is 0: the bytes
// that have arrived may be only framing (the CRLF after a chunk, part of a
// size line), past which a read waits; and one read already returns every
// chunk that has arrived whole, the end with it when that has come too.
func (b *body) Buffered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done || b.chunked {
		return 0
	}
	return b.c.buffered()
}

// Arrived reports whether any of the body has arrived and not been read,
// framing included: whether its first bytes came with the head.
func (b *body) Arrived() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.done && b.c.buffered() > 0
}

// Close closes the body; a connection whose reply was not read to the end
// is closed rather than pooled, since what is left on it is unknown. A
// read after Close fails, as it does on net/http's reply bodies.
func (b *body) Close() error {
	b.closed.Store(true)
	b.finish(false)
	return nil
}

func (b *body) finish(whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	b.t.release(b.c, b.stop, whole && b.keep, b.rest)
}

// get returns a pooled connection of key that is still open and quiet,
// else (when spare allows) a spare that is, or dials addr. Every reuse costs
// a non-blocking peek (one system call): a connection skipped that check
// while it was young until an upstream that wrote a second response 20 ms
// after its first had that response read as the next caller's reply (issue
// 15). A spare has sat idle like a pooled connection and is checked alike.
func (t *Transport) get(ctx context.Context, addr, key string, spare bool) (*conn, error) {
	for {
		c := t.pop(key)
		if c == nil {
			break
		}
		if !c.headSet.IsZero() && lazydeadline.Due(c.headSet, time.Now(), t.ResponseHeaderTimeout) {
			// Kept after the last reply (readResponse), it would soon be
			// moved anyway; lifted before the peek, which it could fail.
			c.clearHeadDeadline()
		}
		if c.buffered() == 0 && c.peek.alive() {
			c.reused = true
			return c, nil
		}
		c.drop() // closed by the upstream while pooled, or it sent bytes unasked
	}
	if t.Spares <= 0 {
		return t.dialConn(ctx, addr, key)
	}
	// A miss: whatever it is served with, the spares are topped up behind it.
	defer t.refill(addr)
	for spare {
		c := t.takeSpare(addr)
		if c == nil {
			break
		}
		if c.buffered() == 0 && c.peek.alive() {
			c.key = key // from now on the connection is key's, like one it dialled
			c.reused = true
			return c, nil
		}
		c.nc.Close() // closed or half-closed by the upstream, or it sent bytes unasked
		t.spareDied(addr)
	}
	return t.dialConn(ctx, addr, key)
}

// dialConn dials a new connection of key to addr.
func (t *Transport) dialConn(ctx context.Context, addr, key string) (*conn, error) {
	nc, err := t.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("hop: %w", err)
	}
	c := newConn(nc, addr)
	c.key = key
	return c, nil
}

// newConn is a connection over nc to addr, its reads bounded by its
// headLimit (open until a response head is read).
func newConn(nc net.Conn, addr string) *conn {
	lim := &headLimit{r: rawsock.NewReader(nc), n: -1}
	c := &conn{nc: nc, w: rawsock.NewWriter(nc), lim: lim, br: bufio.NewReaderSize(lim, readBuffer), peek: newPeeker(nc), addr: addr}
	c.closer = func() { nc.Close() }
	c.unslot = func() bool {
		a := c.reg
		c.reg = nil // the request's context is not held while c idles
		return a != nil && a.StopSlot(c.regSlot)
	}
	return c
}

// MaxResponseHead bounds what an upstream may send before its reply's
// body (interim replies included), as net/http's Transport bounds it
// (MaxResponseHeaderBytes); past it the call fails with
// ErrResponseHeadTooLarge and the connection is dropped. Heads are a few
// hundred bytes: 1 MiB leaves room for any real one, and an upstream that
// sends an endless head costs that much, not the sidecar's memory.
const MaxResponseHead = 1 << 20

// ErrResponseHeadTooLarge is a response head longer than MaxResponseHead.
var ErrResponseHeadTooLarge = errors.New("hop: response head larger than 1 MiB")

// headLimit passes reads to r, at most n bytes of them while n >= 0
// (then ErrResponseHeadTooLarge); n < 0 means no bound. What the watch of
// a request's write read of the reply (peeker.watch) is in early, read
// before r.
type headLimit struct {
	r     io.Reader
	n     int64
	early []byte
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.read(p)
	}
	if l.n == 0 {
		return 0, ErrResponseHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.read(p)
	l.n -= int64(n)
	return n, err
}

func (l *headLimit) read(p []byte) (int, error) {
	if len(l.early) == 0 {
		return l.r.Read(p)
	}
	n := copy(p, l.early)
	l.early = l.early[n:]
	if len(l.early) == 0 {
		l.early = nil // the watch's buffer is not held
	}
	return n, nil
}

// buffered is how many bytes have come from the upstream and not been
// read: in br, and those the watch read ahead of it.
func (c *conn) buffered() int { return c.br.Buffered() + len(c.lim.early) }

// dial connects to addr within DialTimeout.
func (t *Transport) dial(ctx context.Context, addr string) (net.Conn, error) {
	t.dials.Add(1)
	timeout := t.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, "tcp", addr)
}

func (t *Transport) pop(key string) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.idle[key]
	if len(cs) == 0 {
		return nil
	}
	c := cs[len(cs)-1]
	cs[len(cs)-1] = nil
	if len(cs) == 1 {
		delete(t.idle, key) // partitions come and go with callers: no empty entries
		c.slot = cs[:0]
	} else {
		t.idle[key] = cs[:len(cs)-1]
	}
	t.n--
	c.pooled = false
	// The idle timer is left running: stopping it here and starting it
	// again in put cost two updates of the runtime's timer heap per call.
	// If it fires before the connection is back and has idled for
	// IdleTimeout, expire puts it off.
	return c
}

func (t *Transport) put(c *conn) {
	max := t.MaxIdle
	if max <= 0 {
		max = DefaultMaxIdle
	}
	if c.buffered() > 0 {
		c.drop() // bytes past the reply's end: nobody asked for them
		return
	}
	t.mu.Lock()
	first := !t.keptAlive[c.addr]
	if first {
		// The upstream keeps connections open: spares may serve it
		// (spares.go), starting now.
		if t.keptAlive == nil {
			t.keptAlive = make(map[string]bool)
		}
		t.keptAlive[c.addr] = true
		if t.Spares > 0 {
			defer t.refill(c.addr)
		}
	}
	var evicted *conn
	if t.n >= max {
		// Full: the connection idle longest makes room, as net/http's
		// Transport evicts its least recently used one, so that a new
		// partition (a new caller) still gets a pooled connection.
		evicted = t.oldest()
		if evicted == nil || !t.remove(evicted) {
			t.mu.Unlock()
			c.drop()
			return
		}
		evicted.stopTimer()
	}
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	if cs, ok := t.idle[c.key]; ok || c.slot == nil {
		t.idle[c.key] = append(cs, c)
	} else {
		t.idle[c.key] = append(c.slot, c)
	}
	c.slot = nil
	t.n++
	c.pooled = true
	c.since = time.Now()
	switch {
	case c.timer == nil:
		c.timer = time.AfterFunc(t.idleTimeout(), func() { t.expire(c) })
		c.due = true
	case !c.due:
		c.timer.Reset(t.idleTimeout())
		c.due = true
	}
	t.mu.Unlock()
	if evicted != nil {
		evicted.nc.Close()
	}
}

// oldest is the pooled connection that entered the pool first; t.mu must
// be held. The walk is over the pool, only when it is full.
func (t *Transport) oldest() *conn {
	var o *conn
	for _, cs := range t.idle {
		if len(cs) > 0 && (o == nil || cs[0].since.Before(o.since)) {
			o = cs[0]
		}
	}
	return o
}

// idleTimeout is IdleTimeout or its default.
func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout <= 0 {
		return DefaultIdleTimeout
	}
	return t.IdleTimeout
}

// expire is c's timer's: it closes c if it is still a spare, or idle in the
// pool since IdleTimeout. A pooled connection back for less long (its timer
// ran on while it carried requests) has the timer put off to its own time;
// one that carries a request now is left to put's next start. An expired
// spare is not replaced: the next miss asks for a refill.
func (t *Transport) expire(c *conn) {
	t.mu.Lock()
	c.due = false
	switch {
	case c.pooled:
		if idle := time.Since(c.since); idle < t.idleTimeout() {
			c.timer.Reset(t.idleTimeout() - idle)
			c.due = true
			t.mu.Unlock()
			return
		}
		if !t.remove(c) {
			t.mu.Unlock()
			return
		}
	case c.spare && t.removeSpare(c):
	default:
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.nc.Close()
}

// drop closes c for good, out of the pool, and stops the idle timer a
// pooled past left running, which would hold c until it fired.
func (c *conn) drop() {
	c.nc.Close()
	if c.timer != nil {
		c.timer.Stop()
	}
}

// stopTimer stops c's idle timer, for a connection leaving the pool for
// good or taken as a spare; t.mu must be held.
func (c *conn) stopTimer() {
	c.timer.Stop()
	c.due = false
}

// remove takes c out of the pool; t.mu must be held.
func (t *Transport) remove(c *conn) bool {
	cs := t.idle[c.key]
	for i, x := range cs {
		if x == c {
			rest := append(cs[:i], cs[i+1:]...)
			cs[len(cs)-1] = nil
			if len(rest) == 0 {
				delete(t.idle, c.key)
			} else {
				t.idle[c.key] = rest
			}
			t.n--
			c.pooled = false
			return true
		}
	}
	return false
}

// CloseIdleConnections closes every pooled connection and every spare,
// stops any refill under way (none starts again until a request misses the
// pool), and closes the idle connections of the Fallback and its clones.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	all := t.dropSpares()
	for key, cs := range t.idle {
		for _, c := range cs {
			c.pooled = false
			c.stopTimer()
		}
		all = append(all, cs...)
		delete(t.idle, key)
	}
	t.n = 0
	t.mu.Unlock()
	for _, c := range all {
		c.nc.Close()
	}
	t.closeFallbacks()
}

// Idle reports how many connections the pool holds.
func (t *Transport) Idle() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// hostPort is the address to dial for req: its URL's host with the port
// http implies when none is given.
func hostPort(req *http.Request) string {
	host := req.URL.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "80")
	}
	return host
}

// poolKey is the pool's key for req to addr: addr alone, or with a hash of
// the values of the Partition headers when req carries any. The hash keeps
// credentials out of the pool's keys; a request without them costs nothing,
// and one with them the key's string alone: what is hashed is laid out in
// room on the stack (a larger set of values, such as a long JWT, grows it
// once), where a streaming hash cost three allocations more (four with a
// value longer than 32 bytes).
func (t *Transport) poolKey(addr string, req *http.Request) string {
	var room [1024]byte
	b := room[:0]
	for _, name := range t.Partition {
		for _, v := range req.Header.Values(name) {
			// Length-prefixed, so that no two header sets hash alike by
			// moving bytes from one value to the next.
			b = strconv.AppendInt(b, int64(len(name)+len(v)), 10)
			b = append(b, name...)
			b = append(b, v...)
		}
	}
	if len(b) == 0 {
		return addr
	}
	sum := sha256.Sum256(b)
	return addr + "\x00" + string(sum[:])
}

// inMemory is a request body whose bytes are in memory: Bytes returns
// those not yet read, without reading them, never to be modified (the
// proxy's bodies are such, and MemBody is). Read before the first attempt,
// they are the whole body, which a retry sends again where there is no
// GetBody: the proxy leaves it out for the requests carried here, one
// allocation less.
type inMemory interface{ Bytes() []byte }

// MemBytes returns the bytes of req's body not yet read, without reading
// them, when the body holds them in memory (a MemBody, or a body that
// embeds one): for the caller to look at, never to modify. The era bridge
// looks at a body so.
func MemBytes(req *http.Request) ([]byte, bool) {
	m, ok := req.Body.(inMemory)
	if !ok {
		return nil, false
	}
	return m.Bytes(), true
}

// rewindable reports whether req can be sent again.
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// replayable reports whether the upstream may safely see req twice: the
// rule net/http applies (safe methods, or an idempotency key).
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
