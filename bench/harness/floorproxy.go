package harness

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/rawsock"
)

// floorBuffer is each connection's one read buffer.
const floorBuffer = 64 << 10

// ServeFloorProxy serves the floor for a hop in a Go process: one goroutine
// per client connection, with its own upstream connection dialled once and
// kept alive, reads and writes both through internal/rawsock (the sockets
// the sidecar uses) into one 64 KiB buffer per connection, and frames
// HTTP/1.1 messages without net/http: it finds the end of a head, reads its
// Content-Length or follows its chunked body, and forwards the bytes
// unchanged, a request then its reply, each whole message in one write (a
// chunked body goes out as its chunks arrive, so an SSE stream is relayed
// event by event; a message larger than the buffer goes out in
// buffer-sized pieces). What is left is the cost of the system calls,
// wake-ups and scheduling of a hop in a Go process, with as little
// user-space work as a hop can do.
//
// It is a measuring stick for scripts/bench-wrk.sh, not a proxy: no
// timeouts, no limits, no header checks beyond framing, no Connection
// handling (it keeps both connections until one side closes them), no
// Expect: 100-continue (the client's wait for it runs out); anything it
// cannot frame (frameHead's bad) drops the connection.
//
// With o.Busy, each request costs that much more CPU, spent on the relaying
// goroutine's thread once the request has gone upstream (see spendCPU).
func ServeFloorProxy(ctx context.Context, o ServeOptions) error {
	return serveRelay(ctx, o, func(c, up net.Conn) { relayFloorBusy(c, up, o.Busy) })
}

// relayFloor carries requests from c to up and replies back, one at a
// time, until either side fails, closes or sends what cannot be framed.
func relayFloor(c, up net.Conn) { relayFloorBusy(c, up, 0) }

// relayFloorBusy is relayFloor spending busy of CPU per request.
func relayFloorBusy(c, up net.Conn, busy time.Duration) {
	cin := &inbox{r: rawsock.NewReader(c), buf: make([]byte, floorBuffer)}
	uin := &inbox{r: rawsock.NewReader(up), buf: make([]byte, floorBuffer)}
	cw, uw := rawsock.NewWriter(c), rawsock.NewWriter(up)
	for {
		req, err := relayMessage(cin, uw, false, false)
		if err != nil {
			return
		}
		if busy > 0 {
			spendCPU(busy)
		}
		for {
			resp, err := relayMessage(uin, cw, true, req.headReq)
			if err != nil {
				return
			}
			if resp.status >= 200 {
				break // a 1xx is interim: the final reply follows
			}
		}
	}
}

// errUnframed is a message the floor cannot frame, or one whose element
// does not fit its buffer.
var errUnframed = errors.New("cannot frame the message")

// inbox is one connection's read side: its buffer holds the unread bytes
// buf[lo:hi].
type inbox struct {
	r      io.Reader
	buf    []byte
	lo, hi int
}

// fill moves the unread bytes to the front and reads more after them.
func (in *inbox) fill() error {
	if in.lo > 0 {
		in.hi = copy(in.buf, in.buf[in.lo:in.hi])
		in.lo = 0
	}
	if in.hi == len(in.buf) {
		return errUnframed
	}
	n, err := in.r.Read(in.buf[in.hi:])
	in.hi += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// send writes the first n unread bytes to w and takes them.
func (in *inbox) send(w io.Writer, n int) error {
	if n == 0 {
		return nil
	}
	_, err := w.Write(in.buf[in.lo : in.lo+n])
	in.lo += n
	return err
}

// relayMessage reads one message from in and writes it to w, and says how
// its head was framed.
func relayMessage(in *inbox, w io.Writer, reply, headReq bool) (frame, error) {
	var f frame
	for {
		f = frameHead(in.buf[in.lo:in.hi], reply, headReq)
		if f.kind != needMore {
			break
		}
		if err := in.fill(); err != nil {
			return f, err
		}
	}
	switch f.kind {
	case sized:
		return f, relaySized(in, w, int64(f.n)+f.length)
	case chunked:
		return f, relayChunked(in, w, f.n)
	}
	return f, errUnframed
}

// relaySized relays a message of total bytes: in one write once all of it
// is in the buffer, or in full buffers when it cannot be.
func relaySized(in *inbox, w io.Writer, total int64) error {
	for {
		have := in.hi - in.lo
		if int64(have) >= total {
			return in.send(w, int(total))
		}
		if have == len(in.buf) {
			if err := in.send(w, have); err != nil {
				return err
			}
			total -= int64(have)
		}
		if err := in.fill(); err != nil {
			return err
		}
	}
}

// Where relayChunked is in a chunked body.
const (
	atChunkLine = iota
	inChunkData
	atChunkEnd
	atTrailers
)

// relayChunked relays a chunked body that starts ready bytes into the
// unread ones (after the head): whatever is framed goes out before each
// read, so every chunk leaves as soon as it has arrived.
func relayChunked(in *inbox, w io.Writer, ready int) error {
	state, rest := atChunkLine, int64(0)
	for {
		p := in.buf[in.lo+ready : in.hi]
		more := false
		switch state {
		case atChunkLine:
			f := frameChunkLine(p)
			switch {
			case f.kind == needMore:
				more = true
			case f.kind == bad:
				return errUnframed
			case f.length == 0:
				ready += f.n
				state = atTrailers
			default:
				ready += f.n
				state, rest = inChunkData, f.length
			}
		case inChunkData:
			k := int(min(rest, int64(len(p))))
			ready += k
			rest -= int64(k)
			if rest == 0 {
				state = atChunkEnd
			}
			more = k == 0
		case atChunkEnd:
			switch {
			case len(p) >= 2 && p[0] == '\r' && p[1] == '\n':
				ready += 2
				state = atChunkLine
			case len(p) >= 2 || (len(p) == 1 && p[0] != '\r'):
				return errUnframed
			default:
				more = true
			}
		case atTrailers:
			f := frameTrailers(p)
			switch f.kind {
			case needMore:
				more = true
			case bad:
				return errUnframed
			default:
				return in.send(w, ready+f.n)
			}
		}
		if !more {
			continue
		}
		if err := in.send(w, ready); err != nil {
			return err
		}
		ready = 0
		if err := in.fill(); err != nil {
			return err
		}
	}
}
