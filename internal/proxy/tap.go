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
		resp.Body = &sseTap{ReadCloser: resp.Body, o: o}
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
		t.o.EndMessage()
		t.o.Done(true)
	} else if err != nil {
		t.done = true
		t.o.Done(false)
	}
	return n, err
}

func (t *jsonTap) Close() error {
	if !t.done {
		t.done = true
		t.o.Done(false)
	}
	return t.ReadCloser.Close()
}

// sseTap shows each SSE event's data to its observer as it is read: a
// streaming form of the SSE spec's line rules (LF, CRLF or CR ends a line;
// "data:" lines, one leading space dropped, joined by LF; a blank line ends
// the event), keeping nothing of the stream but a field name.
type sseTap struct {
	io.ReadCloser
	o    rewrite.Observer
	done bool

	st      tapState
	name    [5]byte // the field name so far ("data" is all that matters)
	nname   int
	cr      bool // the last byte was CR: an LF next belongs to it
	hasData bool // the event has had a data line
}

type tapState uint8

const (
	tapLineStart tapState = iota
	tapName
	tapValueStart // after "data:", where one space is dropped
	tapValue      // a data line's value
	tapSkip       // the rest of any other line
)

func (t *sseTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.done {
		return n, err
	}
	t.scan(p[:n])
	if err == io.EOF {
		t.done = true
		t.o.Done(true) // an event cut at the end was never dispatched: the observer knows
	} else if err != nil {
		t.done = true
		t.o.Done(false)
	}
	return n, err
}

func (t *sseTap) Close() error {
	if !t.done {
		t.done = true
		t.o.Done(false)
	}
	return t.ReadCloser.Close()
}

func (t *sseTap) scan(b []byte) {
	for i := 0; i < len(b); {
		c := b[i]
		if t.cr {
			t.cr = false
			if c == '\n' {
				i++
				continue
			}
		}
		switch t.st {
		case tapLineStart:
			if c == '\n' || c == '\r' {
				if t.hasData {
					t.o.EndMessage()
				}
				t.hasData, t.cr = false, c == '\r'
				i++
				continue
			}
			t.st, t.nname = tapName, 0
		case tapName:
			switch {
			case c == ':' || c == '\n' || c == '\r':
				isData := t.nname == 4 && string(t.name[:4]) == "data"
				if isData && t.hasData {
					t.o.Write([]byte{'\n'})
				}
				t.hasData = t.hasData || isData
				switch {
				case c != ':':
					t.st, t.cr = tapLineStart, c == '\r'
				case isData:
					t.st = tapValueStart
				default:
					t.st = tapSkip
				}
			case t.nname < len(t.name):
				t.name[t.nname] = c
				t.nname++
			default:
				t.nname = len(t.name) + 1 // longer than "data"
				t.st = tapSkip
			}
			i++
		case tapValueStart:
			t.st = tapValue
			if c == ' ' {
				i++
			}
		case tapValue, tapSkip:
			e := len(b)
			if k := bytes.IndexByte(b[i:], '\n'); k >= 0 {
				e = i + k
			}
			if k := bytes.IndexByte(b[i:e], '\r'); k >= 0 {
				e = i + k
			}
			if t.st == tapValue && e > i {
				t.o.Write(b[i:e])
			}
			if e < len(b) {
				t.st, t.cr = tapLineStart, b[e] == '\r'
				e++
			}
			i = e
		}
	}
}
