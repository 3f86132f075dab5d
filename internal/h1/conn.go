package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
	"github.com/skills-sidecar/skills-sidecar/internal/rawsock"
	"github.com/skills-sidecar/skills-sidecar/internal/slotctx"
)

// Connection states, for Shutdown.
const (
	stateNew    = iota // accepted, no request yet
	stateActive        // reading or serving a request
	stateIdle          // waiting for the next request
)

// What the read deadline in force was set for; it is moved lazily.
const (
	dlNone    = iota // no deadline
	dlHeader         // ReadHeaderTimeout, for a head
	dlIdle           // IdleTimeout, between requests (set at rdAt)
	dlHandler        // the handler's own
	dlStale          // anything else (a handler's from an earlier request, the watcher's stop)
)

// watchDelay is how long a request runs before the watcher looks for the
// client going away (once the body is consumed): fast calls never pay for
// the goroutine, the read and the wake-ups it takes. At 25 ms, calls that
// waited behind 31 others for a busy upstream (17-26 ms) paid them: 4% more
// CPU per call than at 250 ms. A call the client left runs at most this
// much longer upstream.
const watchDelay = 250 * time.Millisecond

// maxDiscard is how much of a body a handler left unread the server reads
// off to keep the connection, as net/http's server.
const maxDiscard = 256 << 10

// aLongTimeAgo is a deadline in the past, to stop a blocked read at once.
var aLongTimeAgo = time.Unix(1, 0)

// errTooLarge is a head over MaxHeaderBytes; errURITooLong one whose
// request line alone is (RFC 9112, section 3: 414).
var (
	errTooLarge   = errors.New("http: request too large")
	errURITooLong = errors.New("http: request line too long")
)

// conn is one client connection and what it reuses from request to request.
type conn struct {
	srv      *Server
	rwc      net.Conn
	rd       io.Reader // rwc's reads and writes, raw where rawsock serves it
	wr       io.Writer
	cr       connReader
	br       *bufio.Reader
	remote   string
	base     context.Context
	state    atomic.Int32
	accepted time.Time

	served   int  // requests read so far
	lastPost bool // the last request was a POST, for the tolerance of CRLF after one
	// What the read deadline in force is. While a handler runs, a body
	// read about to wait on the socket (bodyDeadline), the read-off at a
	// Flush (body.drain), the handler's SetReadDeadline and Hijack may
	// move the deadline from any of its goroutines: they do it, and read
	// or set rdKind, under dlMu, so that none lifts another's deadline.
	rdKind int
	dlMu   sync.Mutex
	rdAt   time.Time

	// What the write deadline in force is, under wdMu: the handler's
	// SetWriteDeadline and SetWriteTimeout may run on one of its
	// goroutines while another's read of the body sends "100 Continue",
	// which lifts a stale deadline first.
	wdMu    sync.Mutex
	wdSet   bool // the handler set a write deadline during this request
	wdStale bool // one set during an earlier request may still be in force
	// The write deadline in force as SetWriteTimeout set it: for wdFor
	// (0: it was not, or it was lifted), at wdAt.
	wdFor time.Duration
	wdAt  time.Time

	// Reply buffers, reused from request to request, and the reply's
	// header map (response.Header), cleared after each.
	head, pend, out []byte
	header          http.Header
	keys            []string
	sniff           [512]byte
	clBuf           [20]byte

	watchByte [1]byte
	watchDone chan struct{}

	mu        sync.Mutex // guards the fields below, shared with the server's watch clock and the watcher
	cur       *exchange  // the request being served, nil between requests
	watchAt   int64      // when cur will have run for watchDelay (clockNanos)
	bodyDone  bool       // the handler has consumed the request body
	wantWatch bool       // the request streams or has run for watchDelay
	watching  bool       // a watcher goroutine is reading
	stopping  bool       // the watcher is being stopped
	hijacked  bool
	ctx       *slotctx.Context // the request's context, to cancel
}

func newConn(s *Server, rw net.Conn) *conn {
	c := &conn{srv: s, rwc: rw, rd: rawsock.NewReader(rw), wr: rawsock.NewWriter(rw), accepted: time.Now(), remote: rw.RemoteAddr().String()}
	c.cr.c = c
	c.br = bufio.NewReaderSize(&c.cr, smallRead)
	c.base = context.WithValue(context.Background(), http.LocalAddrContextKey, rw.LocalAddr())
	if d := s.ReadHeaderTimeout; d > 0 {
		rw.SetReadDeadline(c.accepted.Add(d))
		c.rdKind = dlHeader
	}
	return c
}

// connReader reads the connection for the buffered reader: the byte the
// watcher took first, and within the limit of a head while one is read
// (readHead judges no byte past it, so none is read).
type connReader struct {
	c        *conn
	limited  bool
	remain   int64
	stash    byte
	hasStash bool
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.limited {
		if r.remain <= 0 {
			return 0, io.EOF
		}
		if int64(len(p)) > r.remain {
			p = p[:r.remain]
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if r.hasStash {
		p[0] = r.stash
		r.hasStash = false
		r.remain--
		return 1, nil
	}
	n, err := r.c.rd.Read(p)
	r.remain -= int64(n)
	return n, err
}

func (c *conn) serve() {
	defer c.finish()
	for {
		x, err := c.readRequest()
		if err != nil {
			c.refuse(err)
			return
		}
		if !c.run(x) {
			return
		}
		c.shrink()
		if c.srv.shutting.Load() {
			return
		}
		c.state.Store(stateIdle)
	}
}

// finish closes the connection unless a handler took it over.
func (c *conn) finish() {
	c.mu.Lock()
	hijacked := c.hijacked
	c.mu.Unlock()
	if !hijacked {
		c.rwc.Close()
		c.srv.trackConn(c, false)
	}
}

// readRequest reads the next request's head.
func (c *conn) readRequest() (*exchange, error) {
	limit := c.srv.maxHeaderBytes() // exactly: net/http allows 4096 bytes more
	// What the buffer holds already (read with the last request's body,
	// up to its 4 KiB) is the start of this head: the socket gives what
	// is left of the limit. readHead judges the first limit bytes of the
	// head alone, wherever they came from, so the verdict on a head is
	// the same first on a connection and pipelined.
	c.cr.limited, c.cr.remain = true, int64(limit-c.br.Buffered())
	x, err := readHead(c.br, c.lastPost, limit, c.waiting)
	for err == errHeadTooLong {
		// A long head: the buffer doubles, up to the limit, until it holds
		// the whole of it, so that a client that stalls part-way holds
		// about twice what it sent, not the limit. Nothing was taken from
		// the buffer: the head is read again from its start.
		c.br = grow(c.br, &c.cr, min(2*c.br.Size(), limit))
		x, err = readHead(c.br, c.lastPost, limit, c.waiting)
	}
	if err != nil {
		return nil, err
	}
	c.cr.limited = false
	if c.rdKind == dlHeader {
		// That deadline was this head's (or the connection's first): the
		// next head, if it comes in parts, is given its own. Left as
		// dlHeader, it bounded a head pipelined behind a request that
		// moved no read deadline (a body that came whole) from when the
		// connection opened.
		c.rdKind = dlStale
	}
	c.state.Store(stateActive)
	if err := checkRequest(x); err != nil {
		return nil, err
	}
	c.served++
	c.lastPost = x.req.Method == http.MethodPost
	return x, nil
}

// smallRead is the read buffer's size, and smallReply the most a reply
// buffer keeps between requests: one a long head or a large reply grew is
// let go, so that an idle connection holds what a small request needs.
const (
	smallRead  = 4 << 10
	smallReply = 16 << 10
)

// shrink lets go of the buffers the last request grew beyond the small
// sizes; the read buffer only once what it holds fits a small one.
func (c *conn) shrink() {
	if c.br.Size() > smallRead {
		if n := c.br.Buffered(); n == 0 {
			c.br = bufio.NewReaderSize(&c.cr, smallRead)
		} else if n <= smallRead {
			c.br = grow(c.br, &c.cr, smallRead)
		}
	}
	if cap(c.pend) > smallReply {
		c.pend = nil
	}
	if cap(c.out) > smallReply {
		c.out = nil
	}
	if cap(c.head) > smallReply {
		c.head = nil
	}
	clear(c.keys[:cap(c.keys)]) // the names of the last reply's fields
	if len(c.header) > maxKeptFields {
		c.header = nil // a map grown by an unusual reply is let go
	} else {
		clear(c.header)
	}
}

// maxKeptFields bounds the reply header map a connection keeps for its
// next reply.
const maxKeptFields = 32

// grow returns a reader of size over what br holds (taken from it) and
// then src.
func grow(br *bufio.Reader, src io.Reader, size int) *bufio.Reader {
	held, _ := br.Peek(br.Buffered())
	held = bytes.Clone(held)
	br.Discard(len(held))
	return bufio.NewReaderSize(io.MultiReader(bytes.NewReader(held), src), size)
}

// waiting is told before a read of a head waits on the socket, with what
// has arrived of the head so far.
func (c *conn) waiting(have int) {
	if have == 0 {
		if c.served > 0 {
			c.idleDeadline()
		}
		return
	}
	c.state.Store(stateActive)
	c.headerDeadline()
}

// errHeadTooLong is a head that does not fit in the reader's buffer.
var errHeadTooLong = errors.New("request head longer than the buffer")

// lookHook, set only by a test, is told the bytes of a head each look at
// it spans (looked): what readHead's cost grows with, counted where a
// clock would only be noisy.
var lookHook func(n int)

func looked(n int) {
	if lookHook != nil {
		lookHook(n)
	}
}

// readHead reads a request head of at most limit bytes from br: a plain
// one (scanHead) parsed here once it lies whole in the buffer, anything
// else by http.ReadRequest once it lies whole in the buffer too (so that
// the Host fields, which that reader drops, can be checked as net/http's
// server does), or at once if its request line is one that reader
// refuses. Only the first limit bytes are looked at, however many the
// buffer holds: a head that does not end within them is errTooLarge
// (errURITooLong if its request line does not either), malformed or not,
// as net/http's server answers a head its limited read cut short. A head
// within the limit that does not fit in the buffer is errHeadTooLong, and
// nothing is taken from br: read it again from a larger buffer. afterPost
// skips up to four bytes of CR and LF before the head (counted in the
// limit), as net/http's server does after a POST. waiting, if not nil, is
// told before each read that waits for more of the head.
func readHead(br *bufio.Reader, afterPost bool, limit int, waiting func(have int)) (*exchange, error) {
	skip := 0
	if afterPost {
		skip = 4
	}
	// view returns the head's bytes buffered, within the limit, and how
	// many leading CR and LF come before them.
	view := func() ([]byte, int) {
		buf, _ := br.Peek(min(br.Buffered(), limit))
		off := 0
		for off < skip && off < len(buf) && (buf[off] == '\r' || buf[off] == '\n') {
			off++
		}
		return buf[off:], off
	}
	// more waits for more of the head than the n bytes buffered: nil if
	// it came, the verdict on a head that reached the limit or filled
	// the buffer, or the read's error.
	more := func(buf []byte, n int) error {
		if n >= limit {
			if bytes.IndexByte(buf, '\n') < 0 {
				return errURITooLong
			}
			return errTooLarge
		}
		if n >= br.Size() {
			return errHeadTooLong
		}
		if waiting != nil {
			waiting(len(buf))
		}
		_, err := br.Peek(n + 1)
		return err
	}
	// A head that comes in pieces has each piece looked at once, as
	// net/textproto reads one line by line: the scan resumes where the
	// line not yet whole starts (next), and only once a line end has come
	// since the last look (at the seen bytes). Looking again at the whole
	// head at each read made a head sent a byte at a time cost work in
	// its length squared: a 64 KiB one, seconds of CPU.
	next, seen, at := 0, 0, -1 // at: the off next and seen count from
	for {
		buf, off := view()
		if off != at {
			next, seen, at = 0, 0, off // CR or LF skipped since: the head starts later
		}
		n, v := 0, plainhead.Partial
		looked(len(buf) - seen)
		if bytes.IndexByte(buf[seen:], '\n') >= 0 {
			n, v, next = scanHead(buf, next)
		}
		seen = len(buf)
		if v == plainhead.Plain {
			x := new(exchange)
			if parsePlain(&x.head, buf[:n]) {
				br.Discard(off + n)
				x.req = &x.head.req
				x.plain = true
				return x, nil
			}
			break
		}
		if v == plainhead.NotPlain {
			break
		}
		if err := more(buf, off+len(buf)); err != nil {
			if isHeadVerdict(err) || len(buf) == 0 {
				return nil, err
			}
			break // net/http's reader meets the error again and says what it makes of it
		}
	}
	next, seen, at = 0, 0, -1
	lineOK := false // the first line is whole, and that reader takes it
	for {
		buf, off := view()
		if off != at {
			next, seen, at, lineOK = 0, 0, off, false
		}
		looked(len(buf) - seen)
		if bytes.IndexByte(buf[seen:], '\n') >= 0 {
			if !lineOK {
				line, _, _ := bytes.Cut(buf, []byte{'\n'})
				if !requestLineOK(string(bytes.TrimSuffix(line, []byte{'\r'}))) {
					break // refused at its first line
				}
				lineOK = true
			}
			var end int
			if end, next = headEndFrom(buf, next); end >= 0 {
				break
			}
		}
		seen = len(buf)
		if err := more(buf, off+len(buf)); err != nil {
			if isHeadVerdict(err) {
				return nil, err
			}
			break
		}
	}
	_, off := view()
	br.Discard(off)
	buf, _ := br.Peek(br.Buffered())
	x := &exchange{}
	headFields(x, buf)
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	x.req = req
	x.both = x.both || (x.te && req.ProtoMinor == 0)
	return x, nil
}

// isHeadVerdict reports whether err is readHead's own: a head over the
// limit, or one longer than the buffer.
func isHeadVerdict(err error) bool {
	return err == errTooLarge || err == errURITooLong || err == errHeadTooLong
}

// requestLineOK reports whether http.ReadRequest takes line as a request
// line: a method that is a token, a target net/url parses (an authority
// for CONNECT), and an HTTP version.
func requestLineOK(line string) bool {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" {
		return false
	}
	for i := 0; i < len(method); i++ {
		if !httpguts.IsTokenRune(rune(method[i])) {
			return false
		}
	}
	if _, _, ok := http.ParseHTTPVersion(proto); !ok {
		return false
	}
	if method == http.MethodConnect && !strings.HasPrefix(target, "/") {
		target = "http://" + target
	}
	_, err := url.ParseRequestURI(target)
	return err == nil
}

// headEnd returns the length of the head at the start of buf (request
// line and fields up to the empty line, LF or CRLF ended, as net/textproto
// reads lines), or -1 if it is not whole.
func headEnd(buf []byte) int {
	end, _ := headEndFrom(buf, 0)
	return end
}

// headEndFrom is headEnd resumed at from: 0, or the next an earlier call
// returned for the start of the same bytes. next is where the line not
// yet whole starts (0 while the first line is not), for a call with more
// of the head.
func headEndFrom(buf []byte, from int) (end, next int) {
	looked(len(buf) - from)
	pos := from
	if pos == 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return -1, 0
		}
		pos = i + 1
	}
	for {
		rest := buf[pos:]
		switch {
		case len(rest) >= 1 && rest[0] == '\n':
			return pos + 1, pos
		case len(rest) >= 2 && rest[0] == '\r' && rest[1] == '\n':
			return pos + 2, pos
		}
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return -1, pos
		}
		pos += j + 1
	}
}

// headFields reads the head at the start of buf as net/textproto does, for
// x's Host fields and whether its framing is one RFC 9112 (section 6.1)
// says to close after: both a Content-Length and a Transfer-Encoding, or a
// Transfer-Encoding in HTTP/1.0.
func headFields(x *exchange, buf []byte) {
	end := headEnd(buf)
	if end < 0 {
		return
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(buf[:end])))
	if _, err := tp.ReadLine(); err != nil {
		return
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return
	}
	x.head.hosts = h["Host"]
	x.te = len(h["Transfer-Encoding"]) > 0
	x.both = x.te && len(h["Content-Length"]) > 0
}

// idleDeadline gives a kept-alive connection waiting for its next request
// IdleTimeout, moved at most once a second.
func (c *conn) idleDeadline() {
	d := c.srv.IdleTimeout
	if d <= 0 {
		c.noDeadline()
		return
	}
	now := time.Now()
	if c.rdKind == dlIdle && now.Sub(c.rdAt) < time.Second {
		return
	}
	c.rwc.SetReadDeadline(now.Add(d))
	c.rdKind, c.rdAt = dlIdle, now
}

// headerDeadline gives a head that did not come whole ReadHeaderTimeout
// from now, unless one is in force.
func (c *conn) headerDeadline() {
	if c.rdKind == dlHeader {
		return
	}
	d := c.srv.ReadHeaderTimeout
	if d <= 0 {
		c.noDeadline()
		return
	}
	c.rwc.SetReadDeadline(time.Now().Add(d))
	c.rdKind = dlHeader
}

// bodyDeadline lifts a deadline the server set before a body read waits
// on the socket; a handler's own stays, set before or while this runs on
// another of its goroutines.
func (c *conn) bodyDeadline() {
	c.dlMu.Lock()
	if c.rdKind != dlHandler {
		c.noDeadline()
	}
	c.dlMu.Unlock()
}

// liftStaleWriteDeadline lifts a write deadline a handler set for an
// earlier request.
func (c *conn) liftStaleWriteDeadline() {
	c.wdMu.Lock()
	defer c.wdMu.Unlock()
	if c.wdStale {
		c.rwc.SetWriteDeadline(time.Time{})
		c.wdStale, c.wdFor = false, 0
	}
}

func (c *conn) noDeadline() {
	if c.rdKind != dlNone {
		c.rwc.SetReadDeadline(time.Time{})
		c.rdKind = dlNone
	}
}

// refuse answers a request the server does not pass to the handler, as
// net/http's server does, and leaves the connection to be closed.
func (c *conn) refuse(err error) {
	const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	c.liftStaleWriteDeadline()
	var rf *refusal
	switch {
	case err == errTooLarge || err == errURITooLong:
		text := "431 Request Header Fields Too Large"
		if err == errURITooLong {
			text = "414 URI Too Long"
		}
		io.WriteString(c.wr, "HTTP/1.1 "+text+errorHeaders+text)
		c.closeWriteAndWait()
	case isUnsupportedTE(err):
		io.WriteString(c.wr, "HTTP/1.1 501 Not Implemented"+errorHeaders+"Unsupported transfer encoding")
	case isCommonNetReadError(err):
	case errors.As(err, &rf):
		fmt.Fprintf(c.wr, "HTTP/1.1 %d %s%s%d %s", rf.code, rf.Error(), errorHeaders, rf.code, rf.Error())
	default:
		const text = "400 Bad Request"
		io.WriteString(c.wr, "HTTP/1.1 "+text+errorHeaders+text)
	}
}

func isUnsupportedTE(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "too many transfer encodings") || strings.HasPrefix(s, "unsupported transfer encoding")
}

func isCommonNetReadError(err error) bool {
	if err == io.EOF {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "read"
}

// closeWriteAndWait ends the server's side and waits a little before the
// close, so that the client reads the reply before a reset caused by
// request bytes left unread could destroy it (net/http's rstAvoidanceDelay).
func (c *conn) closeWriteAndWait() {
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	time.Sleep(500 * time.Millisecond)
}

// exchange is one request and its reply, in one allocation for a plain head.
type exchange struct {
	head  plainHead
	req   *http.Request
	plain bool // the head was parsed here
	te    bool // it had a Transfer-Encoding (read by headFields)
	both  bool // framing to close after: Content-Length and Transfer-Encoding, or Transfer-Encoding in HTTP/1.0
	body  body
	resp  response
	ctx   slotctx.Context
}

// run serves x and reports whether the connection may carry another
// request.
func (c *conn) run(x *exchange) bool {
	req := x.req
	x.ctx.Init(c.base)
	*req = *req.WithContext(&x.ctx)
	req.RemoteAddr = c.remote
	w := &x.resp
	w.init(c, x)
	w.closeAfter = x.both
	x.body.init(c, x, c.br)
	expect := req.Header["Expect"]
	if len(expect) > 0 && hasToken(expect[0], "100-continue") {
		if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
			x.body.expect = true
			w.expectBody = true
		}
	} else if len(expect) > 0 && expect[0] != "" {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusExpectationFailed)
		w.end()
		x.ctx.Cancel()
		return false
	}
	if x.body.none {
		if req.Body == nil || x.plain {
			req.Body = http.NoBody
		}
	} else {
		req.Body = &x.body
	}
	if c.watchDone == nil {
		c.watchDone = make(chan struct{}, 1)
	}
	at := clockNanos(time.Now()) + int64(watchDelay)
	c.mu.Lock()
	c.cur, c.bodyDone, c.wantWatch, c.ctx, c.watchAt = x, x.body.none, false, &x.ctx, at
	c.mu.Unlock()
	c.srv.armWatch(at) // after cur is set: see Server.sweep

	panicked := c.handle(w, req)
	x.body.ended.Store(true)

	c.mu.Lock()
	c.cur, c.ctx = nil, nil
	hijacked := c.hijacked
	c.mu.Unlock()
	x.ctx.Cancel()
	if hijacked {
		return false
	}
	c.disarm()
	if panicked {
		return false
	}
	w.end()
	c.wdMu.Lock()
	if c.wdSet {
		// Lifted lazily, before the next write the handler does not
		// bound itself: a proxy that sets one per reply pays one move.
		c.wdStale, c.wdSet = true, false
	}
	c.wdMu.Unlock()
	if c.rdKind == dlHandler {
		c.rdKind = dlStale
	}
	// A request with both a Content-Length and a Transfer-Encoding is
	// served by the latter, as net/http does, and one of HTTP/1.0 with a
	// Transfer-Encoding by its Content-Length (or none), as net/http does,
	// but the connection closes after either (RFC 9112 section 6.1): it
	// may be a smuggling attempt.
	closeAfter := w.closeAfter || w.failed != nil || req.Close
	if w.tooBig {
		c.closeWriteAndWait()
	}
	return !closeAfter
}

// handle runs the handler and reports whether it panicked; a panic other
// than http.ErrAbortHandler is logged with its stack, as net/http does.
func (c *conn) handle(w *response, r *http.Request) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			if v != http.ErrAbortHandler {
				const size = 64 << 10
				buf := make([]byte, size)
				buf = buf[:runtime.Stack(buf, false)]
				c.srv.logf("http: panic serving %v: %v\n%s", c.remote, v, buf)
			}
		}
	}()
	if r.RequestURI == "*" && r.Method == http.MethodOptions {
		w.Header().Set("Content-Length", "0") // net/http's answer to "OPTIONS *"
		return false
	}
	c.srv.handler().ServeHTTP(w, r)
	return false
}

// consumed is the body's: the handler has read it to its end.
func (c *conn) consumed() {
	c.mu.Lock()
	c.bodyDone = true
	c.armLocked()
	c.mu.Unlock()
}

// streaming is the writer's: the handler flushed.
func (c *conn) streaming() {
	c.mu.Lock()
	c.wantWatch = true
	c.armLocked()
	c.mu.Unlock()
}

// armLocked starts the watcher if the request is due one and has none.
// Bytes already buffered (a pipelined request) do not stop it: the byte it
// reads comes after them. Nothing is kept of an earlier request's
// watcher: after the client's end, a new one meets the end again at once,
// as net/http's background read does, and after an error that was not the
// end (a deadline the handler set) it reads on.
func (c *conn) armLocked() {
	if !c.wantWatch || !c.bodyDone || c.watching || c.hijacked || c.cur == nil {
		return
	}
	if c.cr.hasStash {
		return // a byte is kept already: the next one is not needed to see the client
	}
	c.watching = true
	c.rwc.SetReadDeadline(time.Time{})
	go c.watch()
}

// watch reads the socket while a handler runs: an end or an error means
// the client is gone and cancels the request's context, but what is
// buffered is still served (a client that half-closed after pipelining
// gets its replies; the next read of the socket meets the end again); a
// byte (of a pipelined request) is kept for the next head.
func (c *conn) watch() {
	n, err := c.rd.Read(c.watchByte[:])
	c.mu.Lock()
	if n == 1 {
		c.cr.stash, c.cr.hasStash = c.watchByte[0], true
	}
	if err != nil && !c.stopping {
		if c.ctx != nil {
			c.ctx.Cancel()
		}
	}
	c.mu.Unlock()
	c.watchDone <- struct{}{}
}

// disarm stops the watcher, if one runs, and waits for it.
func (c *conn) disarm() {
	c.mu.Lock()
	if !c.watching {
		c.mu.Unlock()
		return
	}
	c.stopping = true
	c.mu.Unlock()
	c.rwc.SetReadDeadline(aLongTimeAgo)
	<-c.watchDone
	c.mu.Lock()
	c.watching, c.stopping = false, false
	c.mu.Unlock()
	c.dlMu.Lock()
	c.rdKind = dlStale
	c.dlMu.Unlock()
}

// hasToken reports whether token is in v, delimited by the start or end or
// by space, tab or comma, case-insensitively, as net/http reads Expect and
// Connection.
func hasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	if v == token {
		return true
	}
	for sp := 0; sp <= len(v)-len(token); sp++ {
		b := v[sp]
		if b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !isTokenBoundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !isTokenBoundary(v[end]) {
			continue
		}
		if plainhead.EqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

func isTokenBoundary(b byte) bool {
	return b == ' ' || b == ',' || b == '\t'
}
