package hop

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
)

// readHead reads a response head from br as http.ReadResponse does, and
// is the same for every input: it parses a plain head itself (see
// scanHead and plainResponse) and hands anything else, unread, to
// http.ReadResponse. net/http's reader costs about twelve allocations per
// reply (a string per line and per value, its transfer reader, a limit
// reader); a plain head costs four here (the head as one string, the
// response with its body, the header map and its table), two into a map
// kept from an earlier reply (readHeadInto).
//
// A head is looked at only once it lies whole in br's buffer, so one
// longer than the buffer always goes to net/http's reader, which has no
// bound of its own on a response head (nor had this package before).
func readHead(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	return readHeadInto(br, req, nil)
}

// readHeadInto is readHead building a plain head's header into *spare, an
// empty map kept from an earlier reply (Release), if there is one; *spare
// is nil once taken.
func readHeadInto(br *bufio.Reader, req *http.Request, spare *http.Header) (*http.Response, error) {
	for {
		buf, _ := br.Peek(br.Buffered())
		n, v := scanHead(buf)
		if v == plainhead.Plain {
			if resp := plainResponse(br, buf[:n], req, spare); resp != nil {
				br.Discard(n)
				return resp, nil
			}
		}
		if v != plainhead.Partial || len(buf) >= br.Size() {
			break
		}
		// Wait for more of the head, as net/http's reader would. An error
		// (a hang-up, a timeout) is left for net/http's reader to meet
		// again and report.
		if _, err := br.Peek(len(buf) + 1); err != nil {
			break
		}
	}
	return http.ReadResponse(br, req)
}

// scanHead looks at the start of a response for a plain head
// (internal/plainhead) whose first line is "HTTP/1.x ddd reason".
func scanHead(buf []byte) (int, int) { return plainhead.Scan(buf, plainStatusLine) }

// plainStatusLine reports whether line is "HTTP/1.1 ddd" or "HTTP/1.0 ddd",
// alone or followed by a space and any reason.
func plainStatusLine(line []byte) bool {
	if len(line) < 12 || (string(line[:9]) != "HTTP/1.1 " && string(line[:9]) != "HTTP/1.0 ") {
		return false
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(line) == 12 || line[12] == ' '
}

// plainReply is a response parsed here, held with its body (of a length,
// or chunked), the room for the Transport's wrapper of that body (finish)
// and the first values of its header in one allocation.
type plainReply struct {
	http.Response
	body    lengthBody
	chunked chunkedBody
	wrap    body
	values  [8]string
	te      [1]string
}

// plainResponse builds the response net/http's reader makes of head, a
// plain head (scanHead), or returns nil for one whose framing is not the
// plain case: a reply to HEAD, a status without a body (1xx, 204, 304) or
// outside 200–599, a Pragma (net/http adds a Cache-Control for it), a
// Trailer, and any framing but one Content-Length that is a plain decimal
// or, in HTTP/1.1, one "Transfer-Encoding: chunked" without a
// Content-Length (the SSE replies MCP servers send). Such a reply goes to
// net/http's reader, which frames it, refuses it, or reads its body to the
// connection's close.
// The header is built into *spare if spare holds a map (taken: *spare is
// nil after), else into a new one.
func plainResponse(br *bufio.Reader, head []byte, req *http.Request, spare *http.Header) *http.Response {
	if req != nil && req.Method == http.MethodHead {
		return nil
	}
	s := string(head)
	end := strings.Index(s, "\r\n")
	line := s[:end]
	code := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil
	}
	r := &plainReply{}
	resp := &r.Response
	resp.Status = line[9:]
	resp.StatusCode = code
	resp.Proto = line[:8]
	resp.ProtoMajor, resp.ProtoMinor = 1, int(line[7]-'0')
	resp.Request = req
	var h http.Header
	if spare != nil && *spare != nil {
		h = plainhead.FieldsInto(*spare, s[end+2:], r.values[:])
		*spare = nil
	} else {
		h = plainhead.Fields(s[end+2:], r.values[:])
	}
	resp.Header = h
	if _, ok := h["Trailer"]; ok {
		return nil
	}
	if _, ok := h["Pragma"]; ok {
		return nil
	}
	cl, hasCL := h["Content-Length"]
	te, chunked := h["Transfer-Encoding"]
	var n int64
	switch {
	case chunked:
		if hasCL || len(te) != 1 || te[0] != "chunked" || resp.ProtoMinor == 0 {
			return nil
		}
		// As net/http's reader: the framing moves out of the header.
		delete(h, "Transfer-Encoding")
		r.te[0] = "chunked"
		resp.TransferEncoding = r.te[:]
		resp.ContentLength = -1
	case len(cl) == 1:
		var ok bool
		if n, ok = plainhead.Length(cl[0]); !ok {
			return nil
		}
		resp.ContentLength = n
	default:
		return nil
	}
	// net/http's rule for whether the connection closes after the reply,
	// and its removal of "Connection: close" from an HTTP/1.1 reply.
	conn := h["Connection"]
	hasClose := httpguts.HeaderValuesContainsToken(conn, "close")
	if resp.ProtoMinor == 0 {
		resp.Close = hasClose || !httpguts.HeaderValuesContainsToken(conn, "keep-alive")
	} else {
		resp.Close = hasClose
		if hasClose {
			delete(h, "Connection")
		}
	}
	switch {
	case chunked:
		r.chunked = chunkedBody{br: br, cr: httputil.NewChunkedReader(br), resp: resp, wrapRoom: wrapRoom{&r.wrap}}
		resp.Body = &r.chunked
	case n == 0:
		resp.Body = http.NoBody
	default:
		r.body = lengthBody{br: br, n: n, wrapRoom: wrapRoom{&r.wrap}}
		resp.Body = &r.body
	}
	return resp
}

// plainBody is a body plainResponse made, with its wrapRoom.
type plainBody interface {
	io.ReadCloser
	takeWrap() *body
}

// lengthBody is a body of n bytes read from br, read as net/http reads
// one: io.EOF with its last byte, io.ErrUnexpectedEOF if the connection
// ends before it. Its Close does nothing: the Transport's body wrapper
// decides what becomes of the connection.
type lengthBody struct {
	br *bufio.Reader
	n  int64
	wrapRoom
}

// wrapRoom is the room a body plainResponse made brings for the
// Transport's wrapper, taken once (finish).
type wrapRoom struct{ wrap *body }

func (r *wrapRoom) takeWrap() *body {
	w := r.wrap
	r.wrap = nil
	return w
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	m, err := b.br.Read(p)
	b.n -= int64(m)
	if b.n == 0 {
		return m, io.EOF
	}
	if err == io.EOF {
		b.n = 0 // later reads say io.EOF, as net/http's body does
		err = io.ErrUnexpectedEOF
	}
	return m, err
}

func (b *lengthBody) Close() error { return nil }

// chunkedBody is a chunked body read from br as net/http reads one: the
// chunks by net/http's own decoder (httputil.NewChunkedReader), then the
// trailer section (readTrailer). Its Close does nothing, as lengthBody's.
type chunkedBody struct {
	br   *bufio.Reader
	cr   io.Reader
	resp *http.Response // its Trailer takes the trailer's fields
	wrapRoom
	sawEOF bool
	broken bool // the trailer was bad: every read fails
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	switch {
	case b.broken:
		return 0, http.ErrBodyReadAfterClose
	case b.sawEOF:
		return 0, io.EOF
	}
	n, err := b.cr.Read(p)
	if err == io.EOF {
		b.sawEOF = true
		if terr := b.readTrailer(); terr != nil {
			b.sawEOF, b.broken = false, true
			err = terr
		}
	}
	return n, err
}

func (b *chunkedBody) Close() error { return nil }

var errTrailerEOF = errors.New("http: unexpected EOF reading trailer")

// readTrailer reads the trailer section after the last chunk as net/http's
// reader does: the usual empty one is a CRLF; fields become the
// response's Trailer; one that does not end within br's buffer, or is
// cut, is an error.
func (b *chunkedBody) readTrailer() error {
	buf, err := b.br.Peek(2)
	if string(buf) == "\r\n" {
		b.br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !trailerEnds(b.br) {
		return errors.New("http: suspiciously long trailer after chunked body")
	}
	hdr, err := textproto.NewReader(b.br).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return err
	}
	// plainResponse takes no reply that announces a Trailer, so there is
	// none to merge into.
	b.resp.Trailer = http.Header(hdr)
	return nil
}

// trailerEnds reports whether a CRLF CRLF lies in br's buffer, filled as
// far as it goes: a trailer is bounded by the buffer.
func trailerEnds(br *bufio.Reader) bool {
	for size := 4; ; size++ {
		buf, err := br.Peek(size)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// lookHook, set only by a test, is told the bytes of an upstream's early
// answer each look at it spans (looked): what the watch's cost grows with,
// counted where a clock would only be noisy.
var lookHook func(n int)

func looked(n int) {
	if lookHook != nil {
		lookHook(n)
	}
}

// watchWindow is how much of an upstream's answer the watch for one
// (peeker.watch) reads first; its buffer doubles, up to MaxResponseHead,
// while interim replies and a final head do not lie whole within it.
const watchWindow = 4 << 10

// What answerScan makes of the start of an upstream's answer.
const (
	answerMore   = iota // no final head yet: interim replies at most, or part of a head
	answerRefuse        // a final head that refuses the request: the write stops
	answerKeep          // any other final head, or bytes that are no head
)

// answerRefuses judges b, the bytes an upstream has sent while a request
// was still being written, at once (answerScan).
func answerRefuses(b []byte) int {
	var s answerScan
	return s.judge(b)
}

// answerScan judges the bytes an upstream sends while a request is still
// being written, as net/http's reader reads them: interim replies (1xx)
// are passed over, and the first final head says whether the upstream
// refuses the rest (a status of 300 or more), whether or not it says the
// connection closes after it: an upstream that answers 413 and keeps the
// connection may read on, or may not, and only the caller's wait can
// tell, where net/http's Transport hands the answer over at once and
// reuses the connection only if the write ends soon after. An upstream
// that answers 2xx early may read on (a reply streamed while the request
// comes, and what it streams may depend on the rest), so only a refusal
// counts.
//
// The bytes come in pieces, a byte at a time from a slow upstream, and
// the scan resumes where it stopped: each byte is looked at for the end
// of its head once (with the two before it, which may start that end),
// and each head is parsed once, when it is whole. Judging every piece
// from the start cost work in the answer's length times its pieces.
type answerScan struct {
	head int // where the head not yet judged starts: past the interim replies passed over
	seen int // how many bytes the scan has looked at
}

// judge judges b, the bytes so far: those an earlier call was given, and
// maybe more.
func (s *answerScan) judge(b []byte) int {
	for {
		from := max(s.head, s.seen-2)
		looked(len(b) - from)
		end := headEnd(b, from)
		if end < 0 {
			s.seen = len(b)
			return answerMore
		}
		s.seen = end
		// Only a whole head is parsed, and only that head: net/http's
		// reader takes a line cut short as a whole one, and would read
		// on into what follows.
		h := b[s.head:end]
		looked(len(h))
		resp, err := http.ReadResponse(bufio.NewReaderSize(bytes.NewReader(h), len(h)+16), nil)
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			// Not the end of the head after all: look on from the LF that
			// ends the empty line, which may start another end.
			s.seen = end + 1
			continue
		case err != nil:
			return answerKeep // not a head: the read after the write says what it is
		case resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols:
			s.head = end
			continue
		case resp.StatusCode >= 300:
			return answerRefuse
		}
		return answerKeep
	}
}

// headEnd returns where the first head of b ends (past the empty line
// that ends it, which net/http's reader takes as "\r\n" or "\n"), the
// search starting at from, or -1 if no line from there on is followed by
// an empty one.
func headEnd(b []byte, from int) int {
	for i := from; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		switch {
		case i < len(b) && b[i] == '\n':
			return i + 1
		case i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n':
			return i + 2
		}
	}
}
