package hop

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// maxInline is the largest request body written together with the
// request's head in one write. A larger body (or one of unknown length)
// goes through net/http's request writer, which streams it, so that a
// request costs at most this much memory besides its head however large
// its body.
const maxInline = 64 << 10

// defaultUserAgent is the User-Agent net/http's request writer sends when
// a request names none.
const defaultUserAgent = "Go-http-client/1.1"

// heads recycles the buffers requests are written from. A buffer grown past
// what an inline request can need is not kept.
var heads = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// writers recycles the buffers net/http's writer writes through: a
// connection needs one only while it writes, not while it waits or streams.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

// errNotInline says a request is not one writeInline takes: net/http's
// writer carries it instead.
var errNotInline = errors.New("hop: request not written inline")

// errBodyLength says a request's body did not hold ContentLength bytes: the
// request's fault, found before anything was written, and sending it again
// would not mend it.
var errBodyLength = errors.New("hop: request body length differs from its ContentLength")

// errRequest says net/http's writer failed on the request itself, not on
// the connection: its body's Read or Close failed, or the body was shorter
// than its ContentLength, possibly after the head and part of the body went
// out. The upstream is left waiting for the rest, so there is no answer to
// wait for, and sending the request again would not mend it.
var errRequest = errors.New("hop: request")

// errAnswered says a request's write failed after the upstream had begun
// to answer (or hung up): its answer, if any, is the reply.
var errAnswered = errors.New("hop: the upstream answered while the request was being written")

// answerWatcher watches a connection for an answer while a request that
// goes out in several writes is written, and stops the write when one
// comes (conn, by its peeker's watch). stop ends the watch and reports
// whether it saw one; ended, nil where there is no watch, is closed when
// the watch ended by itself on an answer that stops nothing (a 2xx). cut
// closes the connection.
type answerWatcher interface {
	watchAnswer() (stop func() (saw bool), ended <-chan struct{})
	cut()
}

// bodyWrite is a request's write by net/http's writer, on a goroutine of
// its own where it is watched: an upstream may answer 2xx before it has
// read the whole request and stream its reply while it reads on (RFC
// 9110, 6.4), and a write that waited for it to read would wait for ever
// while it waits for its reply to be read. The write then goes on behind
// the answer (writeRequest returns it), as net/http's Transport writes
// every request while the reply is read. It holds what the write needs,
// in one allocation.
type bodyWrite struct {
	req http.Request // the request, its body as rb
	bw  *bufio.Writer
	cw  countingWriter
	rb  readingBody

	done chan struct{} // closed when the write has ended: err is set
	err  error

	mu     sync.Mutex
	ended  bool
	cut    func() // set once the write goes on behind the answer
	cutErr bool   // the request failed, and its write cut the connection
}

// run writes w.req, then ends w. A write behind the answer that fails on
// the request itself (errRequest: its body's Read failed, or it was
// short) cuts the connection: the upstream waits for the rest of a
// request that is not coming, and the reply's reader gets an error that
// says so (bodyWrite.readErr) instead of waiting on it. One that fails on
// the connection leaves the reply to be read as far as it came; either way
// the connection is not reused.
func (w *bodyWrite) run() {
	err := w.req.Write(w.bw)
	if err == nil {
		err = w.bw.Flush()
	}
	w.bw.Reset(nil)
	writers.Put(w.bw)
	w.bw = nil
	if err != nil && w.cw.err == nil {
		if w.rb.err != nil {
			err = w.rb.err
		}
		err = fmt.Errorf("%w: %w", errRequest, err)
	}
	w.mu.Lock()
	w.err, w.ended = err, true
	cut := w.cut
	w.cutErr = cut != nil && errors.Is(err, errRequest)
	w.mu.Unlock()
	close(w.done)
	if w.cutErr {
		cut()
	}
}

// behind lets the write go on behind the answer, cutting the connection
// with cut if it fails, unless it has ended already.
func (w *bodyWrite) behind(cut func()) (ended bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.cut = cut
	}
	return w.ended
}

// wait waits at most d for the write to end and returns its error, or
// errStillWriting.
func (w *bodyWrite) wait(d time.Duration) error {
	select {
	case <-w.done:
		return w.err
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
		return w.err
	case <-t.C:
		return errStillWriting
	}
}

// errStillWriting says a request's write behind its reply had not ended
// when the reply had.
var errStillWriting = errors.New("hop: request still being written after its reply")

// readErr is what a reply's read that failed with err returns: when the
// write behind it cut the connection, the write's error, which says why,
// with the read's.
func (w *bodyWrite) readErr(err error) error {
	select {
	case <-w.done:
	default:
		return err
	}
	if !w.cutErr {
		return err
	}
	return fmt.Errorf("hop: write request behind its reply: %w (%v)", w.err, err)
}

// writeRequest writes req to w, and reports how many bytes went out and
// when the last write began, which ResponseHeaderTimeout counts from. A
// plain request (see appendInline) leaves as one write, head and body
// together: net/http's writer flushes the head on its own whenever the
// body is not a reader it knows to be in memory, and sorts the header's
// keys on every request. Anything else goes through net/http's writer
// unchanged, watched by wa, if not nil: a write that fails after it saw
// the upstream answer is errAnswered. A final answer that refuses nothing
// (a 2xx), come while the write goes on, returns that write, rest: it
// goes on behind the answer (bodyWrite), for the caller to read the
// answer meanwhile; the counts are then zero.
func writeRequest(w io.Writer, req *http.Request, wa answerWatcher) (n int64, last time.Time, rest *bodyWrite, err error) {
	bp := heads.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxInline+8<<10 {
			*bp = (*bp)[:0]
			heads.Put(bp)
		}
	}()
	b, err := appendInline((*bp)[:0], req)
	*bp = b
	if err == errNotInline {
		write := &bodyWrite{req: *req, done: make(chan struct{})}
		write.cw.w = w
		write.bw = writers.Get().(*bufio.Writer)
		write.bw.Reset(&write.cw)
		if req.Body != nil && req.Body != http.NoBody {
			// The body's own error, which net/http's writer returns in a
			// type of its own that does not unwrap.
			write.rb.ReadCloser = req.Body
			write.req.Body = &write.rb
		}
		var stop func() bool
		var ended <-chan struct{}
		if wa != nil {
			stop, ended = wa.watchAnswer()
		}
		saw, stopped := false, false
		if ended == nil {
			write.run()
		} else {
			go write.run()
			select {
			case <-write.done:
			case <-ended:
				// An answer that stops nothing (ended is not closed for
				// one that does): the watch is over, and did not touch the
				// write.
				stop()
				stopped = true
				if !write.behind(wa.cut) {
					return 0, time.Time{}, write, nil
				}
				<-write.done // it ended meanwhile
			}
		}
		if stop != nil && !stopped {
			saw = stop()
		}
		err = write.err
		if saw && err != nil && !errors.Is(err, errRequest) {
			err = fmt.Errorf("%w: %w", errAnswered, err)
		}
		return write.cw.n, write.cw.last, nil, err
	}
	if err != nil {
		closeBody(req)
		return 0, time.Time{}, nil, err
	}
	closeBody(req)
	sent := time.Now()
	m, err := w.Write(b)
	return int64(m), sent, nil, err
}

// appendInline appends req as it goes on the wire to b, or returns
// errNotInline for a request that is not plain: one with trailers or a
// transfer coding, a body of unknown length or longer than maxInline, or
// any field net/http's writer would alter or drop (a header name that is
// not a token, a value with a line break, a control byte or surrounding
// whitespace, a Host that is not plain ASCII). For a plain request the
// bytes are those net/http's writer sends, but for the order of the header
// fields. It reads the body (exactly ContentLength bytes, the body's end
// checked) and does not close it.
func appendInline(b []byte, req *http.Request) ([]byte, error) {
	hasBody := req.Body != nil && req.Body != http.NoBody
	switch {
	case req.Trailer != nil, len(req.TransferEncoding) > 0, req.URL == nil:
		return b, errNotInline
	case hasBody && (req.ContentLength <= 0 || req.ContentLength > maxInline):
		return b, errNotInline
	case !hasBody && req.ContentLength != 0:
		return b, errNotInline // net/http's writer refuses a length without a body
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	ruri := req.URL.RequestURI()
	if !plainToken(method) || !plainHost(host) || !plainValue(ruri) || strings.Contains(ruri, " ") {
		return b, errNotInline
	}
	ua := defaultUserAgent
	if vv, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(vv) > 0 {
			ua = vv[0]
		}
	}
	if ua != "" && !plainValue(ua) {
		return b, errNotInline
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return b, errNotInline
		}
		for _, v := range vv {
			if !plainValue(v) {
				return b, errNotInline
			}
		}
	}

	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, ruri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if ua != "" {
		b = append(b, "User-Agent: "...)
		b = append(b, ua...)
		b = append(b, "\r\n"...)
	}
	if req.Close && !httpguts.HeaderValuesContainsToken(req.Header["Connection"], "close") {
		b = append(b, "Connection: close\r\n"...)
	}
	if hasBody || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		// net/http's rule: a length for every body, and a zero one for a
		// bodiless POST, PUT or PATCH ("many servers expect" one).
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, max(req.ContentLength, 0), 10)
		b = append(b, "\r\n"...)
	}
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // written above from the request's fields, or not at all
		}
		for _, v := range vv {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	if !hasBody {
		return b, nil
	}
	head := len(b)
	b = append(b, make([]byte, req.ContentLength)...)
	n, err := io.ReadFull(req.Body, b[head:])
	if err != nil {
		return b[:head], fmt.Errorf("%w: ContentLength=%d with Body length %d: %w", errBodyLength, req.ContentLength, n, err)
	}
	// One more byte would show a body longer than declared. It is read
	// into b's room past the body: a buffer of its own would escape to the
	// heap through the Read, an allocation per request.
	b = append(b, 0)
	if m, _ := req.Body.Read(b[len(b)-1:]); m > 0 {
		return b[:head], fmt.Errorf("%w: ContentLength=%d with a longer Body", errBodyLength, req.ContentLength)
	}
	return b[:len(b)-1], nil
}

// plainToken reports whether s is a non-empty HTTP token.
func plainToken(s string) bool {
	return s != "" && httpguts.ValidHeaderFieldName(s)
}

// plainValue reports whether s goes on the wire as it is: no control byte
// but tab (so no line break) and no whitespace at either end, which
// net/http's writer would trim.
func plainValue(s string) bool {
	if s != "" && (isSpace(s[0]) || isSpace(s[len(s)-1])) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// plainHost reports whether host is sent as it is: printable ASCII that
// net/http accepts in a Host field, with no IPv6 zone for it to remove and
// nothing for it to convert to punycode.
func plainHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return false
		}
	}
	return httpguts.ValidHostHeader(host)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// readingBody keeps the first error of a request body's Read but io.EOF.
type readingBody struct {
	io.ReadCloser
	err error
}

func (b *readingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// countingWriter counts what net/http's writer got out, for the retry
// rule, notes when its last write began, and keeps the connection's first
// write error, which tells a failed connection from a failed request in
// what the writer returns.
type countingWriter struct {
	w    io.Writer
	n    int64
	last time.Time
	err  error
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	cw.last = time.Now()
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	if cw.err == nil {
		cw.err = err
	}
	return n, err
}
