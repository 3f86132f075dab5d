package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"sync"
	"sync/atomic"
)

// body is a request's body as the handler reads it: bytes already
// buffered first, bounded by the Content-Length or the chunked framing
// (or read by net/http's own body for a head its reader parsed).
//
// Its state is guarded by mu, as net/http's server guards its body: a
// handler may read the body on one goroutine while another sends the
// reply's head (a Flush), at which the server reads off what is left of
// the body (drain). A read holds mu while it waits on the socket, so the
// read-off waits for it, as under net/http. With "Expect: 100-continue"
// the head itself waits for such a read (the reply's ordering after the
// "100 Continue" takes mu), where net/http's sends it at once and closes
// the connection after: a handler that sends its head while another of
// its goroutines waits for the rest of the body holds its head until the
// body comes (the sidecar's proxy reads a body whole before it forwards
// it, so it never does). What may not wait for it
// does not take mu: the handler's SetReadDeadline, which is how it stops
// such a read (the deadline's moves have their own lock, conn.dlMu), and
// Hijack, which stops the read as net/http's does (a deadline in the
// past) before it takes mu and ends the body (hijacked).
type body struct {
	mu       sync.Mutex
	c        *conn // nil in tests of the framing alone
	br       *bufio.Reader
	x        *exchange
	none     bool          // no body: the request carries http.NoBody
	src      io.ReadCloser // net/http's body, for a head its reader parsed
	left     int64         // bytes of a Content-Length body not yet read
	chunk    *chunked      // the decoder of a chunked body
	expect   bool          // "100 Continue" is due at the first read
	sawEOF   bool
	closed   bool
	err      error
	drainNow bool        // the server reads off what the handler left
	replied  bool        // the reply's head has gone: a Close reads nothing
	early    bool        // a Close left a rest larger than maxDiscard unread
	hijacked bool        // the connection was hijacked: the bytes to come are the hijacker's
	srcRead  int64       // bytes read of src
	ended    atomic.Bool // the handler returned: a read of a goroutine it left is refused
}

// unread is how much of a body of declared length is still to come, or -1
// when that is not known (chunked).
func (b *body) unread() int64 {
	switch {
	case b.none || b.sawEOF:
		return 0
	case b.chunk != nil:
		return -1
	case b.src != nil:
		if cl := b.x.req.ContentLength; cl > 0 {
			return cl - b.srcRead
		}
		return -1
	}
	return b.left
}

// Buffered is how many bytes of the body a read gets without waiting on
// the socket: of a Content-Length body, what the connection's buffer
// already holds of it. A chunked body and net/http's say 0 (not known), so
// a caller that bounds a wait by a deadline still sets one for them.
func (b *body) Buffered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.none || b.sawEOF || b.src != nil || b.chunk != nil || b.left <= 0 {
		return 0
	}
	return int(min(b.left, int64(b.br.Buffered())))
}

func (b *body) init(c *conn, x *exchange, br *bufio.Reader) {
	b.c, b.x, b.br = c, x, br
	r := x.req
	switch {
	case !x.plain:
		if r.Body == nil || r.Body == http.NoBody {
			b.none = true
			return
		}
		b.src = r.Body
	case r.ContentLength > 0:
		b.left = r.ContentLength
	case r.ContentLength < 0:
		b.chunk = &chunked{br: b.br}
	default:
		b.none = true
	}
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended.Load() || b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.hijacked {
		return 0, http.ErrHijacked
	}
	return b.read(p)
}

// read reads the body; b.mu must be held.
func (b *body) read(p []byte) (int, error) {
	if b.sawEOF {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.expect {
		b.expect = false
		b.x.resp.sendContinue()
	}
	if len(p) == 0 {
		return 0, nil
	}
	c := b.c
	// A read may wait on the socket: one of a Content-Length body when
	// nothing of it is buffered; one of a chunked body or of net/http's
	// whenever, since framing or the rest of a chunk may be yet to come
	// behind what is buffered. The server's own deadline (the head's,
	// the idle one) is lifted first; the read-off keeps the one it set.
	if c != nil && !b.drainNow && (b.br.Buffered() == 0 || b.chunk != nil || b.src != nil) {
		c.bodyDeadline()
	}
	var n int
	var err error
	switch {
	case b.src != nil:
		n, err = b.src.Read(p)
		b.srcRead += int64(n)
	case b.chunk != nil:
		n, err = b.chunk.Read(p)
		if err == io.EOF {
			err = b.readTrailer()
		}
	default:
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
		n, err = b.br.Read(p)
		b.left -= int64(n)
		switch {
		case b.left == 0:
			err = io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
	}
	switch {
	case err == io.EOF:
		b.sawEOF = true
		if c != nil {
			c.consumed()
		}
	case err != nil:
		b.err = err
	}
	return n, err
}

// readTrailer reads what follows a chunked body's last chunk, the trailer
// fields into the request's Trailer as net/http does, and says io.EOF when
// the body ended well.
func (b *body) readTrailer() error {
	br := b.br
	buf, err := br.Peek(2)
	if bytes.Equal(buf, []byte("\r\n")) {
		br.Discard(2)
		return io.EOF
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !seeDoubleCRLF(br.Size(), br) {
		return errors.New("http: suspiciously long trailer after chunked body")
	}
	hdr, err := textproto.NewReader(br).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return err
	}
	r := b.x.req
	if r.Trailer == nil {
		r.Trailer = make(http.Header, len(hdr))
	}
	for k, vv := range hdr {
		r.Trailer[k] = vv
	}
	return io.EOF
}

var errTrailerEOF = errors.New("http: unexpected EOF reading trailer")

// seeDoubleCRLF peeks, up to the buffer's size, for the end of a trailer.
func seeDoubleCRLF(size int, br interface {
	Peek(int) ([]byte, error)
	Buffered() int
}) bool {
	for peek := 4; peek <= size; peek++ {
		buf, err := br.Peek(peek)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

// Close ends the handler's reads. As net/http's server's body does, a
// Close before the reply's head has gone reads off what is left, up to
// maxDiscard, so that the connection may carry another request; a larger
// rest is left (early) and the connection closes after the reply. Nothing
// is read of a body whose "100 Continue" is not sent (the client holds it
// back) or of a request whose connection closes after the reply anyway.
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.c == nil || b.replied || b.expect || b.hijacked || b.ended.Load() || b.x.req.Close {
		b.closed = true
		return nil
	}
	switch {
	case b.unread() > maxDiscard:
		b.early = true
	case !b.drain():
		b.early = b.err == nil
	}
	b.closed = true
	return nil
}

// drain reads off what the handler left of the body, up to maxDiscard, and
// reports whether the body then ended well (the connection may carry
// another request); b.mu must be held.
func (b *body) drain() bool {
	if b.none || b.sawEOF {
		return true
	}
	if b.err != nil {
		return false
	}
	c := b.c
	// A Flush's read-off runs while the handler's other goroutines may
	// move the deadline.
	c.dlMu.Lock()
	own := c.rdKind != dlHandler // a deadline the handler set stays
	if own {
		// A client that stops sending does not hold the connection:
		// ReadHeaderTimeout from now.
		c.rdKind = dlStale
		c.headerDeadline()
	}
	c.dlMu.Unlock()
	b.drainNow = true
	defer func() {
		b.drainNow = false
		c.dlMu.Lock()
		if own && c.rdKind == dlHeader {
			c.rdKind = dlStale // not the deadline of a head to come
		}
		c.dlMu.Unlock()
	}()
	var buf [4 << 10]byte
	for total := 0; total <= maxDiscard; {
		n, err := b.read(buf[:])
		total += n
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
