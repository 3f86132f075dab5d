package h1

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
)

// maxBuffered is what a reply buffers before it streams: a reply complete
// within it leaves in one write, head and body, with its Content-Length.
const maxBuffered = 64 << 10

// response is the http.ResponseWriter of one request. It frames the reply
// as net/http's server does (chunkWriter.writeHeader): the head as the
// header stood at WriteHeader, a Content-Length for a reply the handler
// finished within maxBuffered, chunked (HTTP/1.1) or to the close
// (HTTP/1.0) for one it streamed, Date and a sniffed Content-Type when
// absent, "Connection: close" when the connection will not carry another
// request.
type response struct {
	c      *conn
	x      *exchange
	req    *http.Request
	header http.Header

	wroteHeader bool // logically (WriteHeader or the first Write)
	headSent    bool // physically
	status      int
	cl          int64 // the reply's length if known, else -1
	written     int64 // body bytes the handler wrote
	chunking    bool
	closeAfter  bool
	tooBig      bool  // the handler left more body than is read off
	failed      error // a write to the connection failed
	expectBody  bool  // the request asked for 100-continue
	noContinue  bool  // no more "100 Continue" (a reply has begun)

	// The header as it stood at WriteHeader, but for the fields whose
	// fate is decided when the head is sent.
	clVals, teVals, connVals []string
	haveType, hasCE, hasDate bool
	trailers                 bool
	declared                 []string // trailer names announced in Trailer
}

func (w *response) init(c *conn, x *exchange) {
	w.c, w.x, w.req, w.cl = c, x, x.req, -1
	c.pend = c.pend[:0]
}

// Header returns the reply's header: the connection's map, cleared
// after each reply (conn.shrink), which a handler may not use once it has
// returned, as it may not use the ResponseWriter (net/http's contract).
func (w *response) Header() http.Header {
	if w.header == nil {
		if w.c.header == nil {
			w.c.header = make(http.Header)
		}
		w.header = w.c.header
	}
	return w.header
}

func bodyAllowed(code int) bool {
	return !(code >= 100 && code <= 199 || code == http.StatusNoContent || code == http.StatusNotModified)
}

func (w *response) WriteHeader(code int) {
	if w.isHijacked() {
		w.logCaller("http: response.WriteHeader on hijacked connection from %s (%s:%d)")
		return
	}
	if w.wroteHeader {
		w.logCaller("http: superfluous response.WriteHeader call from %s (%s:%d)")
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.expectBody {
		// A goroutine of the handler reading the body may be sending
		// "100 Continue" (sendContinue, under the body's lock): an interim
		// reply, or the reply, goes after it, and none after the reply.
		w.x.body.mu.Lock()
		defer w.x.body.mu.Unlock()
	}
	if code < 102 || code > 199 {
		w.noContinue = true
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		b := appendStatusLine(w.c.out[:0], w.req.ProtoAtLeast(1, 1), code)
		b = w.appendFields(b, w.header, true)
		b = append(b, "\r\n"...)
		w.c.out = b
		w.write(b)
		return
	}
	w.wroteHeader = true
	w.status = code
	// The snapshot comes first: net/http's holds an invalid Content-Length
	// it then drops from the handler's header, and so frames the reply
	// as one of unknown length.
	w.snapshot()
	if v := w.header["Content-Length"]; len(v) > 0 && v[0] != "" {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err == nil && n >= 0 {
			w.cl = n
		} else {
			w.c.srv.logf("http: invalid Content-Length of %q", v[0])
			delete(w.header, "Content-Length")
		}
	}
}

// logCaller logs format with the handler's function, file and line.
func (w *response) logCaller(format string) {
	pc := make([]uintptr, 8)
	n := runtime.Callers(3, pc)
	frames := runtime.CallersFrames(pc[:n])
	f, _ := frames.Next()
	w.c.srv.logf(format, f.Function, path.Base(f.File), f.Line)
}

// snapshot writes the status line and the header fields into c.head as
// they stand now, keeping aside those decided when the head is sent.
func (w *response) snapshot() {
	c := w.c
	h := w.header
	code := w.status
	b := appendStatusLine(c.head[:0], w.req.ProtoAtLeast(1, 1), code)
	w.clVals, w.teVals, w.connVals = h["Content-Length"], h["Transfer-Encoding"], h["Connection"]
	_, w.haveType = h["Content-Type"]
	_, w.hasDate = h["Date"]
	w.hasCE = h.Get("Content-Encoding") != ""
	w.declared = w.declared[:0]
	for _, v := range h["Trailer"] {
		w.trailers = true
		for _, k := range strings.Split(v, ",") {
			k = http.CanonicalHeaderKey(textTrim(k))
			switch k {
			case "", "Transfer-Encoding", "Trailer", "Content-Length":
				continue
			}
			w.declared = append(w.declared, k)
		}
	}
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			w.trailers = true
		}
	}
	if !bodyAllowed(code) {
		w.clVals, w.teVals = nil, nil
	}
	c.head = w.appendFields(b, h, !bodyAllowed(code))
}

// appendFields appends the fields of h but those decided at sending and
// the trailers, sorted by name, as net/http's Header.WriteSubset writes
// them: names that are not tokens left out, CR and LF in values made
// spaces. noBody leaves out what a reply without a body must not carry.
func (w *response) appendFields(b []byte, h http.Header, noBody bool) []byte {
	keys := w.c.keys[:0]
	for k := range h {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Connection":
			if w.wroteHeader || noBody && k != "Connection" {
				continue
			}
		case "Content-Type":
			if w.status == http.StatusNotModified {
				continue
			}
		}
		if strings.HasPrefix(k, http.TrailerPrefix) || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			b = appendField(b, k, v)
		}
	}
	w.c.keys = keys[:0]
	return b
}

func appendField(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	v = textTrim(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, "\r\n"...)
}

// textTrim trims what textproto.TrimString does (ASCII space, tab, CR, LF).
func textTrim(s string) string {
	for len(s) > 0 && isASCIISpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isASCIISpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isASCIISpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func appendStatusLine(b []byte, is11 bool, code int) []byte {
	if is11 {
		b = append(b, "HTTP/1.1 "...)
	} else {
		b = append(b, "HTTP/1.0 "...)
	}
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	if text := http.StatusText(code); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

func (w *response) Write(p []byte) (int, error) {
	if w.isHijacked() {
		w.logCaller("http: response.Write on hijacked connection from %s (%s:%d)")
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.cl != -1 && w.written > w.cl {
		return 0, http.ErrContentLength
	}
	if w.failed != nil {
		return 0, w.failed
	}
	c := w.c
	if len(c.pend)+len(p) <= maxBuffered {
		c.pend = append(c.pend, p...)
		return len(p), nil
	}
	if err := w.send(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *response) WriteString(s string) (int, error) {
	c := w.c
	if w.wroteHeader && w.failed == nil && len(c.pend)+len(s) <= maxBuffered && bodyAllowed(w.status) &&
		(w.cl == -1 || w.written+int64(len(s)) <= w.cl) && !w.isHijacked() {
		w.written += int64(len(s))
		c.pend = append(c.pend, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// Flush sends what is buffered, the head first if it has not gone.
func (w *response) Flush() {
	if w.isHijacked() {
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.failed == nil {
		w.send(nil, false)
	}
	w.c.streaming()
}

// FlushError is Flush that reports a failed write.
func (w *response) FlushError() error {
	w.Flush()
	return w.failed
}

// send writes the head if it has not gone, what is buffered and then
// more, and for final the end of the body, in one write.
func (w *response) send(more []byte, final bool) error {
	c := w.c
	out := c.out[:0]
	n := len(c.pend) + len(more)
	if !w.headSent {
		out = w.appendHead(out, more, final)
		w.headSent = true
	}
	if w.req.Method != http.MethodHead && bodyAllowed(w.status) {
		if w.chunking && n > 0 {
			out = strconv.AppendInt(out, int64(n), 16)
			out = append(out, "\r\n"...)
		}
		out = append(out, c.pend...)
		out = append(out, more...)
		if w.chunking && n > 0 {
			out = append(out, "\r\n"...)
		}
		if w.chunking && final {
			out = append(out, "0\r\n"...)
			out = w.appendTrailers(out)
			out = append(out, "\r\n"...)
		}
	}
	c.pend = c.pend[:0]
	if cap(out) > 2*maxBuffered {
		c.out = nil
	} else {
		c.out = out[:0]
	}
	if len(out) == 0 {
		return nil
	}
	return w.write(out)
}

func (w *response) write(b []byte) error {
	if w.failed != nil {
		return w.failed
	}
	w.c.liftStaleWriteDeadline()
	if _, err := w.c.wr.Write(b); err != nil {
		w.failed = err
		return err
	}
	return nil
}

// appendHead appends the head as net/http's server would send it now
// with the body buffered so far (and more), final when the handler has
// returned.
func (w *response) appendHead(b []byte, more []byte, final bool) []byte {
	c := w.c
	req := w.req
	code := w.status
	isHEAD := req.Method == http.MethodHead
	keepAlives := !c.srv.shutting.Load()
	plen := len(c.pend) + len(more)
	te := first(w.teVals)
	hasTE := te != ""
	conn := first(w.connVals)
	var setCL []byte
	var setConn, setTE string
	var setType string

	if final && !w.trailers && !hasTE && bodyAllowed(code) && w.clVals == nil && (!isHEAD || plen > 0) {
		w.cl = int64(plen)
		setCL = strconv.AppendInt(c.clBuf[:0], int64(plen), 10)
	}
	wants10KeepAlive := req.ProtoMajor == 1 && req.ProtoMinor == 0 && hasToken(req.Header.Get("Connection"), "keep-alive")
	if wants10KeepAlive && keepAlives && first(w.clVals) != "" && conn == "keep-alive" {
		w.closeAfter = w.x.both // a faulty framing closes whatever the handler says
	}
	hasCL := w.cl != -1
	if wants10KeepAlive && !w.closeAfter && (isHEAD || hasCL || !bodyAllowed(code)) {
		if w.connVals == nil {
			setConn = "keep-alive"
		}
	} else if !req.ProtoAtLeast(1, 1) || req.Close || hasToken(req.Header.Get("Connection"), "close") {
		w.closeAfter = true
	}
	if conn == "close" || !keepAlives {
		w.closeAfter = true
	}
	// When the head goes out (at a Flush too, before the handler is
	// done), what the handler left of the body is read off, as net/http's
	// server does, so that the watcher can see the client leave; a
	// declared rest of maxDiscard or more is not read but closed after.
	// A goroutine of the handler may be reading the body: the read-off
	// waits for its read.
	if w.expectBody || req.ContentLength != 0 {
		b := &w.x.body
		b.mu.Lock()
		b.replied = true
		if b.early {
			// The handler's Close left a large rest: closed after, with
			// the linger net/http's server gives it.
			w.tooBig, w.closeAfter = true, true
		}
		if w.expectBody && !b.sawEOF {
			w.closeAfter = true
		}
		if req.ContentLength != 0 && !w.closeAfter {
			switch {
			case b.closed && !b.sawEOF:
				w.closeAfter = true
			case b.unread() >= maxDiscard || !b.drain():
				if b.err == nil {
					w.tooBig = true
					w.closeAfter = true
					w.connVals = nil
					setConn = "close"
				} else {
					w.closeAfter = true
				}
			default:
				b.closed = true // as net/http's: a read after the head is ErrBodyReadAfterClose
			}
		}
		b.mu.Unlock()
	}
	if bodyAllowed(code) {
		if !w.hasCE && !w.haveType && !hasTE && plen > 0 {
			setType = http.DetectContentType(w.sniffData(more))
		}
	}
	if hasCL && hasTE && te != "identity" {
		c.srv.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.cl)
		w.clVals, setCL = nil, nil
		hasCL = false
		w.cl = -1
	}
	switch {
	case isHEAD || !bodyAllowed(code):
		w.teVals = nil
	case hasCL:
		w.teVals = nil
	case req.ProtoAtLeast(1, 1):
		if te == "identity" {
			w.closeAfter = true
			w.teVals = nil
		} else {
			w.chunking = true
			setTE = "chunked"
			if te == "chunked" {
				w.teVals = nil
			}
		}
	default:
		w.closeAfter = true
		w.teVals = nil
	}
	if w.chunking {
		w.clVals, setCL = nil, nil
	}
	if w.closeAfter && (!keepAlives || !hasToken(conn, "close")) && !(code == http.StatusSwitchingProtocols && w.header.Get("Upgrade") != "") {
		w.connVals = nil
		if req.ProtoAtLeast(1, 1) {
			setConn = "close"
		}
	}

	b = append(b, c.head...)
	for _, v := range w.clVals {
		b = appendField(b, "Content-Length", v)
	}
	for _, v := range w.teVals {
		b = appendField(b, "Transfer-Encoding", v)
	}
	for _, v := range w.connVals {
		b = appendField(b, "Connection", v)
	}
	if !w.hasDate {
		b = append(b, "Date: "...)
		b = appendDate(b)
		b = append(b, "\r\n"...)
	}
	if setCL != nil {
		b = append(b, "Content-Length: "...)
		b = append(b, setCL...)
		b = append(b, "\r\n"...)
	}
	if setType != "" {
		b = append(b, "Content-Type: "...)
		b = append(b, setType...)
		b = append(b, "\r\n"...)
	}
	if setConn != "" {
		b = append(b, "Connection: "...)
		b = append(b, setConn...)
		b = append(b, "\r\n"...)
	}
	if setTE != "" {
		b = append(b, "Transfer-Encoding: "...)
		b = append(b, setTE...)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

// sniffData is the first 512 bytes of the body buffered and more.
func (w *response) sniffData(more []byte) []byte {
	pend := w.c.pend
	if len(pend) >= 512 || len(more) == 0 {
		return pend
	}
	n := copy(w.c.sniff[:], pend)
	n += copy(w.c.sniff[n:], more)
	return w.c.sniff[:n]
}

func first(vv []string) string {
	if len(vv) == 0 {
		return ""
	}
	return vv[0]
}

// appendTrailers appends the trailer fields of a chunked reply: those
// announced in Trailer and those named with http.TrailerPrefix, as they
// stand now.
func (w *response) appendTrailers(b []byte) []byte {
	// Not only when the head announced some: as net/http's server, the
	// fields named with TrailerPrefix after the head went are sent too.
	var t http.Header
	for k, vv := range w.header {
		if kk, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[kk] = vv
		}
	}
	for _, k := range w.declared {
		for _, v := range w.header[k] {
			if t == nil {
				t = make(http.Header)
			}
			t.Add(k, v)
		}
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		if httpguts.ValidHeaderFieldName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range t[k] {
			b = appendField(b, k, v)
		}
	}
	return b
}

// end completes the reply once the handler has returned.
func (w *response) end() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.send(nil, true)
	if w.cl != -1 && w.written != w.cl && w.req.Method != http.MethodHead && bodyAllowed(w.status) {
		w.closeAfter = true
	}
	if !w.expectBody && w.req.ContentLength == 0 {
		return
	}
	// A goroutine the handler left may still be in a read of the body.
	b := &w.x.body
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.expect || (w.expectBody && !b.sawEOF) {
		w.closeAfter = true
	}
	if !w.closeAfter && w.req.ContentLength != 0 && !b.sawEOF {
		// The head went before the handler was done: what it left of
		// the body is read off now.
		if b.closed || !b.drain() {
			w.closeAfter = true
		}
	}
}

// sendContinue answers "Expect: 100-continue" at the handler's first read
// of the body, unless a reply has begun.
func (w *response) sendContinue() {
	if w.noContinue || w.wroteHeader || w.failed != nil {
		return
	}
	w.noContinue = true
	w.write([]byte("HTTP/1.1 100 Continue\r\n\r\n"))
}

func (w *response) isHijacked() bool {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hijacked
}

// Hijack gives the connection to the handler, with the buffered reader and
// what it holds of the client's next bytes. The server forgets it. As
// net/http's Hijack (conn.hijackLocked): a read of the body waiting on the
// socket on another goroutine is stopped (a read deadline in the past)
// and waited for, so it returns a timeout error having taken no byte;
// then the connection is left with no read or write deadline. The body
// reads nothing after (http.ErrHijacked), where net/http's would read the
// hijacker's bytes: its Request.Body must not be used after Hijack.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := w.c
	if w.isHijacked() {
		return nil, nil, http.ErrHijacked
	}
	if w.wroteHeader && !w.headSent && w.failed == nil {
		w.send(nil, false)
	}
	c.mu.Lock()
	c.hijacked = true
	c.cur = nil
	c.mu.Unlock()
	c.disarm()
	// A deadline in the past, kept (as a handler's is) by a read that
	// gets to the socket after it, stops any read of the body; holding
	// the body's lock, none is under way.
	c.dlMu.Lock()
	c.rwc.SetReadDeadline(aLongTimeAgo)
	c.rdKind = dlHandler
	c.dlMu.Unlock()
	b := &w.x.body
	b.mu.Lock()
	b.hijacked = true
	b.mu.Unlock()
	c.dlMu.Lock()
	c.rwc.SetDeadline(time.Time{})
	c.rdKind = dlNone
	c.dlMu.Unlock()
	c.wdMu.Lock()
	c.wdSet, c.wdStale, c.wdFor = false, false, 0
	c.wdMu.Unlock()
	if c.cr.hasStash {
		c.br.Peek(c.br.Buffered() + 1) // the watcher's byte, into the buffer
	}
	c.srv.trackConn(c, false)
	return c.rwc, bufio.NewReadWriter(c.br, bufio.NewWriter(c.rwc)), nil
}

// SetReadDeadline sets the connection's read deadline, for
// http.ResponseController: from any goroutine of the handler, while
// another is in a read of the body, which it then stops (the read keeps
// the deadline and does not take the body's lock for it).
func (w *response) SetReadDeadline(t time.Time) error {
	c := w.c
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	c.rdKind = dlHandler
	return c.rwc.SetReadDeadline(t)
}

// SetWriteDeadline sets the connection's write deadline until the reply
// is complete, for http.ResponseController.
func (w *response) SetWriteDeadline(t time.Time) error {
	c := w.c
	c.wdMu.Lock()
	defer c.wdMu.Unlock()
	c.wdSet, c.wdStale, c.wdFor = true, false, 0
	return c.rwc.SetWriteDeadline(t)
}

// SetWriteTimeout sets the connection's write deadline to d from now
// until the reply is complete, lazily (package lazydeadline): a deadline
// this method set for d, on this request or an earlier one on the
// connection, less than lazydeadline.Delay(d) ago stays in force. A
// handler that bounds every reply by the same timeout (the proxy's
// send-timeout) so pays one move of the poller's timer per connection
// every few hundred milliseconds rather than one per request; each write
// still gets at least fifteen sixteenths of d.
func (w *response) SetWriteTimeout(d time.Duration) error {
	c := w.c
	now := time.Now()
	c.wdMu.Lock()
	defer c.wdMu.Unlock()
	if c.wdFor == d && d > 0 && (c.wdSet || c.wdStale) && !lazydeadline.Due(c.wdAt, now, d) {
		c.wdSet, c.wdStale = true, false
		return nil
	}
	if err := c.rwc.SetWriteDeadline(now.Add(d)); err != nil {
		c.wdFor = 0
		return err
	}
	c.wdSet, c.wdStale, c.wdFor, c.wdAt = true, false, d, now
	return nil
}

// The Date field, formatted once a second.
type dateCache struct {
	sec int64
	b   []byte
}

var date atomic.Pointer[dateCache]

func appendDate(b []byte) []byte {
	now := time.Now()
	sec := now.Unix()
	d := date.Load()
	if d == nil || d.sec != sec {
		d = &dateCache{sec: sec, b: now.UTC().AppendFormat(nil, http.TimeFormat)}
		date.Store(d)
	}
	return append(b, d.b...)
}
