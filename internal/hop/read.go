package hop

import (
	"bufio"
	"io"
	"net/http"
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

// plainReply is a response parsed here, held with its body, the room for
// the Transport's wrapper of that body (finish) and the first values of
// its header in one allocation.
type plainReply struct {
	http.Response
	body   lengthBody
	wrap   body
	values [8]string
}

// plainResponse builds the response net/http's reader makes of head, a
// plain head (scanHead), or returns nil for one whose framing is not the
// plain case: a reply to HEAD, a status without a body (1xx, 204, 304) or
// outside 200–599, no Content-Length or more than one, one that is not a
// plain decimal, any Transfer-Encoding or Trailer, or a Pragma (net/http
// adds a Cache-Control for it). Such a reply goes to net/http's reader,
// which frames it, refuses it, or reads its body to the connection's close.
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
	if _, ok := h["Transfer-Encoding"]; ok {
		return nil
	}
	if _, ok := h["Trailer"]; ok {
		return nil
	}
	if _, ok := h["Pragma"]; ok {
		return nil
	}
	cl := h["Content-Length"]
	if len(cl) != 1 {
		return nil
	}
	n, ok := plainhead.Length(cl[0])
	if !ok {
		return nil
	}
	resp.ContentLength = n
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
	if n == 0 {
		resp.Body = http.NoBody
	} else {
		r.body = lengthBody{br: br, n: n, wrap: &r.wrap}
		resp.Body = &r.body
	}
	return resp
}

// lengthBody is a body of n bytes read from br, read as net/http reads
// one: io.EOF with its last byte, io.ErrUnexpectedEOF if the connection
// ends before it. Its Close does nothing: the Transport's body wrapper
// decides what becomes of the connection.
type lengthBody struct {
	br   *bufio.Reader
	n    int64
	wrap *body // room for the Transport's wrapper, taken once (finish)
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
