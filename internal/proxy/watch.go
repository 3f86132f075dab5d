package proxy

import (
	"bytes"
	"io"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The two notifications that say the upstream's resources changed.
const (
	ResourcesListChanged = "notifications/resources/list_changed"
	ResourceUpdated      = "notifications/resources/updated"
)

// resourcesPrefix is what the two notifications' names begin with.
var resourcesPrefix = []byte("notifications/resources/")

// maxWatchedEvent bounds one SSE event's data that the watcher keeps to
// parse: an event whose data, its data lines' values joined by LF as the SSE
// spec joins them, is at most this many bytes is parsed; one with more is
// passed through without being kept or parsed. Only data counts: the
// "data:" field names, the space after them, the line ends and other
// fields (event, id, comments, of any length) do not. A resource-change
// notification is a few hundred bytes; a longer event (a reply, a skill
// file) is no notification to find.
const maxWatchedEvent = 64 << 10

// maxWatchedLine is the longest line the watcher keeps: a data line whose
// value is maxWatchedEvent bytes. A longer line is a data line whose value
// alone is over maxWatchedEvent, or another field, which the watcher
// ignores whatever its length.
const maxWatchedLine = len("data: ") + maxWatchedEvent

// watchBody passes an SSE stream through untouched while parsing it into
// events (the SSE spec's line rules: LF, CRLF or CR line ends; data lines
// joined by LF; an event ends at a blank line) and each short event's data
// into JSON-RPC messages. fire is called for a notification whose method is
// one of the two above, never for bytes that merely contain the name (a
// tool's result quoting it, a request or reply carrying it as data). It
// keeps at most maxWatchedEvent bytes of the current event's data (and one
// LF after it) and maxWatchedLine bytes of the current line.
type watchBody struct {
	io.ReadCloser
	r    *http.Request // the request the stream answers, for fire
	fire func(r *http.Request, method, uri string)

	line     []byte // the current line so far
	lineOver bool   // the current line outgrew maxWatchedLine
	overData bool   // and it is a data line
	data     []byte // the current event's data lines so far, each with an LF after it
	over     bool   // the current event's data outgrew maxWatchedEvent
	cr       bool   // the last byte seen was a CR (a CRLF may be split)

	// room is the first room of line and data, in the body's own
	// allocation: an SSE reply's one event (a few hundred bytes) costs
	// none of its own.
	room [2 * firstWatchLine]byte
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.scan(p[:n])
	}
	return n, err
}

// Buffered passes on what the body holds (copyBody's flush policy).
func (b *watchBody) Buffered() int { return buffered(b.ReadCloser) }

// scan feeds a chunk of the stream to the event parser.
func (b *watchBody) scan(chunk []byte) {
	nextLF, nextCR := -2, -2 // positions within chunk, -2: not looked for yet
	off := 0
	for off < len(chunk) {
		if b.cr {
			b.cr = false
			if chunk[off] == '\n' {
				off++ // the LF of a CRLF
				continue
			}
		}
		if nextLF != -1 && nextLF < off {
			nextLF = indexFrom(chunk, off, '\n')
		}
		if nextCR != -1 && nextCR < off {
			nextCR = indexFrom(chunk, off, '\r')
		}
		end := nextLF
		if end < 0 || (nextCR >= 0 && nextCR < end) {
			end = nextCR
		}
		if end < 0 {
			b.appendLine(chunk[off:])
			return
		}
		b.appendLine(chunk[off:end])
		b.endLine()
		b.cr = chunk[end] == '\r'
		off = end + 1
	}
}

// indexFrom is the index in b of c at or after off, or -1.
func indexFrom(b []byte, off int, c byte) int {
	i := bytes.IndexByte(b[off:], c)
	if i < 0 {
		return -1
	}
	return off + i
}

func (b *watchBody) appendLine(seg []byte) {
	if b.lineOver {
		return
	}
	if len(b.line)+len(seg) > maxWatchedLine {
		// Whether it is a data line, from its first bytes: there are more
		// of them than "data:" has.
		b.line = append(b.line, seg[:min(len(seg), len("data:"))]...)
		b.lineOver, b.overData, b.line = true, bytes.HasPrefix(b.line, []byte("data:")), b.line[:0]
		return
	}
	if b.line == nil {
		// Room for a reply's data line from the start, where appends
		// would grow it from the first line's few bytes.
		b.line = b.room[:0:firstWatchLine]
	}
	b.line = append(b.line, seg...)
}

// firstWatchLine is the first capacity of a watcher's line buffer, and of
// its data: an SSE reply's data line, one JSON-RPC message, is mostly under
// it.
const firstWatchLine = 512

func (b *watchBody) endLine() {
	line, over, overData := b.line, b.lineOver, b.overData
	b.line, b.lineOver, b.overData = b.line[:0], false, false
	switch {
	case len(line) == 0 && !over:
		if !b.over && len(b.data) > 0 {
			b.dispatch(b.data[:len(b.data)-1]) // less the last data line's LF
		}
		b.data, b.over = b.data[:0], false
	case over:
		if overData {
			b.over = true // a data value alone over maxWatchedEvent
		}
	case bytes.HasPrefix(line, []byte("data:")), string(line) == "data":
		// The field's value: after the colon and one space, if any; a
		// line of the field name alone has an empty value.
		v := line[min(len(line), len("data:")):]
		if len(v) > 0 && v[0] == ' ' {
			v = v[1:]
		}
		// len(b.data) counts the LF that joins v to the data before it.
		if b.over || len(b.data)+len(v) > maxWatchedEvent {
			b.over = true
			return
		}
		if b.data == nil {
			b.data = b.room[firstWatchLine:firstWatchLine]
		}
		b.data = append(b.data, v...)
		b.data = append(b.data, '\n')
	}
}

// dispatch parses one event's data as a JSON-RPC message (or batch) and
// fires for each resource-change notification in it. An event that cannot
// hold one is not parsed: without a backslash, JSON can only spell the two
// methods as they are, so data holding neither their common prefix nor a
// backslash (the progress notifications and replies a stream mostly
// carries) is passed over for the cost of a scan.
func (b *watchBody) dispatch(data []byte) {
	if !bytes.Contains(data, resourcesPrefix) && bytes.IndexByte(data, '\\') < 0 {
		return
	}
	msgs, _, err := rewrite.ParseBody(data)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.Kind != rewrite.KindNotification || (m.Method != ResourcesListChanged && m.Method != ResourceUpdated) {
			continue
		}
		uri, _ := rewrite.GetString(m.Params, "uri")
		b.fire(b.r, m.Method, uri)
	}
}

// watch wraps an SSE reply to r so that the resource-change notifications
// in it reach OnResourcesChanged.
func (p *Proxy) watch(r *http.Request, body io.ReadCloser) io.ReadCloser {
	return &watchBody{ReadCloser: body, r: r, fire: p.opts.OnResourcesChanged}
}
