package proxy

import (
	"bytes"
	"io"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Observing is implemented by a Local that watches some forwarded replies
// as they pass (a read of an upstream-served skill file, hashed on its way:
// package methods). ObserveReply returns nil for a request it does not
// watch.
type Observing interface {
	ObserveReply(r *http.Request, msg rewrite.Message) rewrite.Observer
}

// Notified is implemented by a Local that wants to know of a client's
// notification the upstream accepted (HTTP 202): the proxy calls Notified
// after relaying it, so the upstream has taken it (package methods starts
// a legacy client's prefetch at notifications/initialized). Behind the era
// bridge's legacy front the 202 is the front's own, for a session it
// minted for the caller.
type Notified interface {
	Notified(r *http.Request, msg rewrite.Message)
}

// tap wraps the body of a reply for its observer, or tells the observer
// the reply is not one it can read (compressed, an SSE reply that is not
// 200, another media type).
func tap(resp *http.Response, o rewrite.Observer, mt string) {
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		o.Done(false)
		return
	}
	switch {
	case mt == "application/json":
		resp.Body = &jsonTap{ReadCloser: resp.Body, o: o}
	case mt == "text/event-stream" && resp.StatusCode == http.StatusOK:
		resp.Body = newSSETap(resp.Body, o)
	default:
		o.Done(false)
	}
}

// jsonTap shows a JSON body to its observer as it is read.
type jsonTap struct {
	io.ReadCloser
	o    rewrite.Observer
	done bool
}

func (t *jsonTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.done {
		return n, err
	}
	if n > 0 {
		t.o.Write(p[:n])
	}
	if err == io.EOF {
		t.done = true
		t.o.EndMessage(rewrite.DispatchAll)
		t.o.Done(true)
	} else if err != nil {
		t.done = true
		t.o.Done(false)
	}
	return n, err
}

// Buffered passes on what the body holds (copyBody's flush policy).
func (t *jsonTap) Buffered() int { return buffered(t.ReadCloser) }

func (t *jsonTap) Close() error {
	if !t.done {
		t.done = true
		t.o.Done(false)
	}
	return t.ReadCloser.Close()
}

// sseTap shows each SSE event's data to its observer as it is read: a
// streaming form of the SSE rules (WHATWG HTML §9.2.6: one leading byte
// order mark dropped; "data:" lines, one leading space dropped, joined by
// LF; a blank line ends the event), keeping nothing of the stream but a
// field name and a short event type.
//
// Where clients part from those rules the tap says so rather than pick a
// reading (the observer publishes nothing it cannot prove every client
// takes): it tells the observer, per event, whether every client reads
// the event as a message (rewrite.Dispatch), and it ends the observation
// as unclean at a bare CR, which ends a line for the SSE rules and is
// line content to go-sdk (it splits lines at LF only). Events whose data
// clients read differently without a bare CR (a first data line behind a
// kept byte order mark, values trimmed of white space) can make a reader
// miss a message or fail on it, but never read another valid one.
type sseTap struct {
	io.ReadCloser
	o    rewrite.Observer
	done bool

	head  [len(utf8BOM)]byte // the body's first bytes while they may be a BOM
	nhead int
	begun bool // the BOM check is over
	bom   bool // the body began with a BOM, which the tap dropped
	first bool // the line being read is the body's first

	st      tapState
	name    [5]byte // the field name so far ("data" and "event" are all that matter)
	nname   int
	cr      bool // the last byte was CR: an LF must follow
	hasData bool // the event has had a data line

	typ   [maxTapType]byte // the raw value of the "event:" line being read
	ntyp  int              // its length; more than maxTapType: longer
	reads [tapReadings]bool
}

// utf8BOM is the byte order mark a stream may start with.
const utf8BOM = "\xef\xbb\xbf"

// maxTapType is how much of an "event:" line's value the tap keeps: a
// longer value is no "message" to a reader that drops one space, and is
// treated as one that go-sdk's trimming might turn into "message".
const maxTapType = 32

// The readings of an event's type the tap follows.
const (
	readSpec    = iota // BOM dropped, one leading space dropped (the SSE rules; the TypeScript SDK)
	readKeepBOM        // the BOM kept as part of the first line's field name
	readTrim           // the BOM kept, the value trimmed of white space (go-sdk)
	tapReadings
)

type tapState uint8

const (
	tapLineStart tapState = iota
	tapName
	tapValueStart // after "data:", where one space is dropped
	tapValue      // a data line's value
	tapType       // an "event:" line's value
	tapSkip       // the rest of any other line
)

func newSSETap(body io.ReadCloser, o rewrite.Observer) *sseTap {
	t := &sseTap{ReadCloser: body, o: o, first: true}
	t.reads = [tapReadings]bool{true, true, true}
	return t
}

func (t *sseTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.done {
		return n, err
	}
	t.feed(p[:n])
	if t.done {
		return n, err
	}
	if err == io.EOF {
		if !t.begun {
			t.begun = true
			t.scan(t.head[:t.nhead])
		}
		t.done = true
		// An event cut at the end was never dispatched: the observer
		// knows. A CR last is bare.
		t.o.Done(!t.cr)
	} else if err != nil {
		t.done = true
		t.o.Done(false)
	}
	return n, err
}

// Buffered passes on what the body holds (copyBody's flush policy).
func (t *sseTap) Buffered() int { return buffered(t.ReadCloser) }

func (t *sseTap) Close() error {
	if !t.done {
		t.done = true
		t.o.Done(false)
	}
	return t.ReadCloser.Close()
}

// spoil ends the observation: the reply is framed so that clients could
// read it differently.
func (t *sseTap) spoil() {
	t.done = true
	t.o.Done(false)
}

// feed takes the next bytes of the body: the first ones are held until
// they show whether the body starts with a BOM.
func (t *sseTap) feed(b []byte) {
	for !t.begun && len(b) > 0 {
		t.head[t.nhead] = b[0]
		t.nhead++
		b = b[1:]
		switch {
		case string(t.head[:t.nhead]) != utf8BOM[:t.nhead]:
			t.begun = true
			t.scan(t.head[:t.nhead])
		case t.nhead == len(utf8BOM):
			t.begun, t.bom = true, true
		}
	}
	if !t.done {
		t.scan(b)
	}
}

func (t *sseTap) scan(b []byte) {
	for i := 0; i < len(b) && !t.done; {
		c := b[i]
		if t.cr {
			t.cr = false
			if c != '\n' {
				t.spoil() // a bare CR
				return
			}
			i++
			continue
		}
		switch t.st {
		case tapLineStart:
			if c == '\n' || c == '\r' {
				t.endEvent()
				t.endLine(c)
				i++
				continue
			}
			t.st, t.nname = tapName, 0
		case tapName:
			switch {
			case c == ':' || c == '\n' || c == '\r':
				t.field(c)
			case t.nname < len(t.name):
				t.name[t.nname] = c
				t.nname++
			default:
				t.nname = len(t.name) + 1 // longer than any name read
				t.st = tapSkip
			}
			i++
		case tapValueStart:
			t.st = tapValue
			if c == ' ' {
				i++
			}
		case tapValue, tapType, tapSkip:
			e := len(b)
			if k := bytes.IndexByte(b[i:], '\n'); k >= 0 {
				e = i + k
			}
			if k := bytes.IndexByte(b[i:e], '\r'); k >= 0 {
				e = i + k
			}
			switch {
			case t.st == tapValue && e > i:
				t.o.Write(b[i:e])
			case t.st == tapType:
				copy(t.typ[min(t.ntyp, maxTapType):], b[i:e])
				t.ntyp = min(t.ntyp+e-i, maxTapType+1)
			}
			if e < len(b) {
				if t.st == tapType {
					t.eventType()
				}
				t.endLine(b[e])
				e++
			}
			i = e
		}
	}
}

// field acts on a field name that ended at c (':' or a line end).
func (t *sseTap) field(c byte) {
	name := string(t.name[:min(t.nname, len(t.name))])
	if t.nname > len(t.name) {
		name = ""
	}
	switch {
	case name == "data":
		if t.hasData {
			t.o.Write([]byte{'\n'})
		}
		t.hasData = true
		t.st = tapValueStart
	case name == "event":
		t.st, t.ntyp = tapType, 0
	default:
		t.st = tapSkip
	}
	if c != ':' {
		if t.st == tapType {
			t.eventType() // "event" alone: the empty type
		}
		t.endLine(c)
	}
}

// eventType takes the value of the "event:" line that ended, in each
// reading. Behind a BOM the body's first line is no "event:" line to a
// reader that keeps the BOM.
func (t *sseTap) eventType() {
	v := t.typ[:min(t.ntyp, maxTapType)]
	spec := v
	if len(spec) > 0 && spec[0] == ' ' {
		spec = spec[1:]
	}
	isMessage := func(v []byte) bool { return len(v) == 0 || string(v) == "message" }
	t.reads[readSpec] = t.ntyp <= maxTapType && isMessage(spec)
	if t.first && t.bom {
		return
	}
	t.reads[readKeepBOM] = t.reads[readSpec]
	t.reads[readTrim] = t.ntyp > maxTapType || isMessage(bytes.TrimSpace(v))
}

// endLine moves past a line ending in c.
func (t *sseTap) endLine(c byte) {
	t.st, t.cr, t.first = tapLineStart, c == '\r', false
}

// endEvent dispatches the event a blank line ended.
func (t *sseTap) endEvent() {
	if t.hasData {
		d := rewrite.DispatchSome
		switch {
		case t.reads == [tapReadings]bool{true, true, true}:
			d = rewrite.DispatchAll
		case t.reads == [tapReadings]bool{}:
			d = rewrite.DispatchNone
		}
		t.o.EndMessage(d)
	}
	t.hasData = false
	t.reads = [tapReadings]bool{true, true, true}
}
