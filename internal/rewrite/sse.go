package rewrite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// handOver is the event size past which Next hands its scratch buffer to
// the event instead of copying it: small events reuse one buffer, large
// ones are not copied twice.
const handOver = 64 << 10

// DefaultMaxEvent is the per-event size limit NewReader uses for 0.
const DefaultMaxEvent = 4 << 20

// A Reader's read buffer (the only bytes it holds beyond the current
// event) starts at firstReadBuf and doubles, up to readBufSize, each time
// a read fills it: a source with more to give at once (a long stream
// arriving in bulk) is read in large pieces, while the usual reply of one
// small event, read once per call on the era bridge's paths, costs 1 KiB
// where a buffer of full size cost 16 KiB, zeroed and then collected.
const (
	firstReadBuf = 1 << 10
	readBufSize  = 16 << 10
)

// firstEvent is the room the scratch buffer of a Reader's events first
// takes: a usual event, one JSON-RPC message, fits in it.
const firstEvent = 512

// ErrEventTooLarge reports an SSE event longer than the Reader's limit. The
// stream cannot be resynchronised after it: the Reader keeps returning it.
var ErrEventTooLarge = errors.New("rewrite: SSE event too large")

// utf8BOM is the byte order mark a stream may start with (WHATWG HTML
// §9.2.5: "One leading U+FEFF BYTE ORDER MARK character must be ignored").
const utf8BOM = "\xef\xbb\xbf"

// Event is one server-sent event as read from a stream. Its slices are its
// own (not shared with the Reader) and stay valid after the next Next.
type Event struct {
	// Raw is the exact bytes of the event, including its terminating blank
	// line (none for a partial event at the end of the stream). Writing
	// every Raw in order reproduces the stream byte for byte.
	Raw []byte
	// Data is the values of the event's data lines joined with "\n" (nil
	// when there is no data line, empty for "data:" alone).
	Data []byte
	// ID is the value of the last id: line without a NUL; HasID says
	// whether there was one.
	ID    string
	HasID bool
	// Name is the value of the last event: line, "" when absent.
	Name string

	// prefix counts the leading bytes of Raw that are not part of the
	// event's lines: the stream's BOM, or the "\n" that completes the bare
	// "\r" that ended the previous event (see Reader.Next).
	prefix int
}

// Reader splits a text/event-stream into events. It holds at most one event
// and a read buffer of 1 to 16 KiB (firstReadBuf, readBufSize); it is not
// safe for concurrent use.
type Reader struct {
	src  io.Reader
	buf  []byte // read buffer; buf[r:w] is unread
	r, w int
	rerr error // the error src returned, reported once buf is drained
	err  error // sticky ErrEventTooLarge
	max  int
	ev   []byte // scratch: the event being read

	started   bool // the BOM check is done
	afterCR   bool // the last byte consumed was a "\r" ending a non-blank line
	pendingLF bool // the last event ended with a bare "\r"
	filled    bool // the last read filled buf: the next is into a larger one
}

// NewReader returns a Reader of the stream r that refuses events longer than
// maxEvent bytes; 0 or less means DefaultMaxEvent.
func NewReader(r io.Reader, maxEvent int) *Reader {
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	return &Reader{src: r, buf: make([]byte, firstReadBuf), max: maxEvent}
}

// Next returns the next event. It returns as soon as the event's blank line
// is read and never waits for more bytes, so a proxy can flush each event
// at once. A final event with no blank line is returned on its own and
// io.EOF comes on the next call; other read errors are returned the same
// way, after the bytes read before them. An event longer than the limit is
// ErrEventTooLarge, never truncated.
//
// Lines end in "\n", "\r\n" or "\r". When an event ends with a bare "\r"
// that is the last byte read so far, Next cannot know whether "\n" follows;
// it returns the event, and a "\n" that does follow is the rest of that
// line ending: it starts the next event's Raw and is not parsed as a line.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	r.ev = r.ev[:0]
	r.consumePrefix()
	prefix := len(r.ev)
	lineStart := prefix
	for {
		done, err := r.scan(&lineStart)
		if err != nil {
			r.err = err
			return Event{}, err
		}
		if done {
			return r.event(prefix), nil
		}
		if !r.fill() {
			if len(r.ev) > 0 {
				return r.event(prefix), nil
			}
			return Event{}, r.rerr
		}
	}
}

// Ready reports whether Next would return without waiting for its source,
// judged from what the Reader holds alone: the bytes read and not yet
// returned hold the blank line that ends an event, or the source has ended
// or failed (Next then returns what is left, and the end). It reads
// nothing: a source's count of the bytes it holds may include some a read
// would still wait past (a chunked body's framing), and a relay that asks
// holds an event meanwhile. Ready may say false where Next would not wait
// (an event's end split across reads), never true where it would: a relay
// asks it whether to flush what it has before reading on.
func (r *Reader) Ready() bool {
	// Only Next reads, and the first Next looks for the BOM: bytes held
	// here have been past that check.
	return r.err != nil || r.rerr != nil || eventEnds(r.buf[r.r:r.w])
}

// Arrived reports whether anything of the stream has come that Next has
// not returned: bytes the Reader holds, its source's end, or what its
// source says has arrived (Arrived). Unlike Ready it does not say that
// Next would not wait: those bytes may be only part of an event. It reads
// nothing.
func (r *Reader) Arrived() bool {
	return r.w > r.r || r.err != nil || r.rerr != nil || Arrived(r.src)
}

// Arrived reports whether a body says any of it has arrived and not been
// read: by an Arrived method (package hop's reply bodies, framing
// included; the era bridge's reader of an SSE reply), else by a Buffered
// one. A body that says neither is taken to have nothing.
func Arrived(body io.Reader) bool {
	if a, ok := body.(interface{ Arrived() bool }); ok {
		return a.Arrived()
	}
	b, ok := body.(interface{ Buffered() int })
	return ok && b.Buffered() > 0
}

// Buffered is, for a reader that passes r's events on one by one, what a
// Read of it returns without waiting for r's source: the length of pending,
// the rest of the event it is passing on; else 1 when it has met the end
// (err) or r has a whole event or the end ready (Ready); else 0. It is the
// count package hop's reply bodies give (Buffered), which a relay asks to
// tell whether to flush before reading on.
func Buffered(pending []byte, err error, r *Reader) int {
	switch {
	case len(pending) > 0:
		return len(pending)
	case err != nil || r.Ready():
		return 1
	}
	return 0
}

// eventEnds reports whether b holds two line endings in a row (other than
// the "\r\n" that is one): whatever came before b, the second starts a
// blank line, which ends an event.
func eventEnds(b []byte) bool {
	for i := 0; ; i++ {
		k := bytes.IndexAny(b[i:], "\r\n")
		if k < 0 {
			return false
		}
		i += k
		if i+1 == len(b) {
			return false
		}
		if b[i] == '\r' && b[i+1] == '\n' {
			i++ // one line ending: what follows it decides
			if i+1 == len(b) {
				return false
			}
		}
		if c := b[i+1]; c == '\r' || c == '\n' {
			return true
		}
	}
}

// consumePrefix moves a leading BOM, or the "\n" completing a "\r" that
// ended the previous event, into the event buffer.
func (r *Reader) consumePrefix() {
	if !r.started {
		r.started = true
		for r.w-r.r < len(utf8BOM) && r.fill() {
		}
		if unread := r.buf[r.r:r.w]; len(unread) >= len(utf8BOM) && string(unread[:len(utf8BOM)]) == utf8BOM {
			r.ev = append(r.ev, utf8BOM...)
			r.r += len(utf8BOM)
		}
	}
	if r.pendingLF {
		r.pendingLF = false
		if r.r < r.w || r.fill() {
			if r.buf[r.r] == '\n' {
				r.ev = append(r.ev, '\n')
				r.r++
			}
		}
	}
}

// scan moves buffered bytes into the event up to and including the blank
// line that ends it, and reports whether it found that line. lineStart is
// the offset in r.ev where the current line starts.
func (r *Reader) scan(lineStart *int) (done bool, err error) {
	for r.r < r.w {
		b := r.buf[r.r:r.w]
		if r.afterCR {
			r.afterCR = false
			if b[0] == '\n' { // the rest of a "\r\n" split between reads
				if err := r.take(1); err != nil {
					return false, err
				}
				*lineStart = len(r.ev)
				continue
			}
		}
		k := indexEOL(b)
		if k < 0 {
			return false, r.take(len(b))
		}
		blank := k == 0 && len(r.ev) == *lineStart
		n := k + 1
		if b[k] == '\r' {
			switch {
			case k+1 < len(b) && b[k+1] == '\n':
				n++
			case k+1 == len(b) && blank:
				r.pendingLF = true
			case k+1 == len(b):
				r.afterCR = true
			}
		}
		if err := r.take(n); err != nil {
			return false, err
		}
		*lineStart = len(r.ev)
		if blank {
			return true, nil
		}
	}
	return false, nil
}

// take moves n unread bytes into the event, enforcing the size limit.
func (r *Reader) take(n int) error {
	if len(r.ev)+n > r.max {
		return fmt.Errorf("read event: more than %d bytes: %w", r.max, ErrEventTooLarge)
	}
	if need := len(r.ev) + n; need > cap(r.ev) {
		// Double, where append grows a large slice by a quarter: a
		// megabyte event is then copied a few times, not dozens.
		// The first takes room for a usual event at once (firstEvent),
		// where doubling would grow it from its first line's few bytes.
		grown := make([]byte, len(r.ev), min(max(need, 2*cap(r.ev), firstEvent), r.max))
		r.ev = grown[:copy(grown, r.ev)]
	}
	r.ev = append(r.ev, r.buf[r.r:r.r+n]...)
	r.r += n
	return nil
}

// fill reads more bytes into the buffer and reports whether any arrived.
func (r *Reader) fill() bool {
	if r.r == r.w {
		r.r, r.w = 0, 0
	} else if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.filled && len(r.buf) < readBufSize {
		grown := make([]byte, min(2*len(r.buf), readBufSize))
		r.w = copy(grown, r.buf[:r.w]) // compacted above: r.r is 0
		r.buf = grown
	}
	if r.w == len(r.buf) {
		return true // full of unread bytes; cannot happen, as scan drains it
	}
	for tries := 0; r.rerr == nil && r.w < len(r.buf); tries++ {
		n, err := r.src.Read(r.buf[r.w:])
		r.w += n
		r.filled = err == nil && r.w == len(r.buf) // a source that ended gives no more
		if err != nil {
			r.rerr = err
		} else if n == 0 && tries >= 100 {
			r.rerr = io.ErrNoProgress
		}
		if n > 0 {
			return true
		}
	}
	return false
}

// Body is Raw without what precedes the event's own lines: the stream's
// BOM, or the "\n" that completes the bare "\r" ending the event before.
// It is what to write when the event is moved out of its place in the
// stream (a BOM past the start would spoil the line it lands on).
func (ev Event) Body() []byte { return ev.Raw[ev.prefix:] }

// event builds the Event read into r.ev.
func (r *Reader) event(prefix int) Event {
	var raw []byte
	if len(r.ev) > handOver {
		// A large event keeps the scratch buffer itself rather than a
		// copy of it; the next event starts a new one.
		raw, r.ev = r.ev, nil
	} else {
		raw = bytes.Clone(r.ev)
	}
	ev := Event{Raw: raw, prefix: prefix}
	ev.parseFields()
	return ev
}

// parseFields fills Data, ID and Name from Raw (WHATWG HTML §9.2.6).
func (ev *Event) parseFields() {
	body := ev.Raw[ev.prefix:]
	dataLines := 0
	for i := 0; i < len(body); {
		line, _, next := nextLine(body, i)
		if len(line) == 0 {
			break // the blank line
		}
		i = next
		name, value := splitField(line)
		switch string(name) {
		case "data":
			ev.addData(value, dataLines)
			dataLines++
		case "event":
			if string(value) == "message" {
				ev.Name = "message" // the usual name, without a copy
			} else {
				ev.Name = string(value)
			}
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID, ev.HasID = string(value), true
			}
		}
	}
}

// addData appends one data line's value. One line aliases Raw; more are
// joined in a new slice so Raw stays intact.
func (ev *Event) addData(value []byte, seen int) {
	switch seen {
	case 0:
		ev.Data = value[:len(value):len(value)]
	case 1:
		joined := make([]byte, 0, len(ev.Data)+1+len(value))
		ev.Data = append(append(append(joined, ev.Data...), '\n'), value...)
	default:
		ev.Data = append(append(ev.Data, '\n'), value...)
	}
}

// nextLine returns the line starting at b[i] without its ending, the ending
// ("\r\n", "\n", "\r", or empty at the end of b) and where the next line
// starts.
func nextLine(b []byte, i int) (line, eol []byte, next int) {
	k := indexEOL(b[i:])
	if k < 0 {
		return b[i:], nil, len(b)
	}
	k += i
	next = k + 1
	if b[k] == '\r' && next < len(b) && b[next] == '\n' {
		next++
	}
	return b[i:k], b[k:next], next
}

// splitField splits a non-blank line into field name and value: the value
// follows the first colon, minus one leading space; a line with no colon
// is all name. A comment line has the empty name.
func splitField(line []byte) (name, value []byte) {
	c := bytes.IndexByte(line, ':')
	if c < 0 {
		return line, line[len(line):]
	}
	value = line[c+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return line[:c], value
}

// indexEOL returns the index of the first "\r" or "\n" in b, or -1. It is
// bytes.IndexAny(b, "\r\n") with vector scans (IndexAny has none, and a
// data line can be a megabyte of base64); the "\r" scan stops at the first
// "\n", so scanning line after line stays linear.
func indexEOL(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	before := b
	if n >= 0 {
		before = b[:n]
	}
	if r := bytes.IndexByte(before, '\r'); r >= 0 {
		return r
	}
	return n
}
