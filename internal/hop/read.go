package hop

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// readHead reads a response head from br as http.ReadResponse does, and
// is the same for every input: it parses a plain head itself (see
// scanHead and plainResponse) and hands anything else, unread, to
// http.ReadResponse. net/http's reader costs about twelve allocations per
// reply (a string per line and per value, its transfer reader, a limit
// reader); a plain head costs four here (the head as one string, the
// response with its body, the header map and its table).
//
// A head is looked at only once it lies whole in br's buffer, so one
// longer than the buffer always goes to net/http's reader, which has no
// bound of its own on a response head (nor had this package before).
func readHead(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		buf, _ := br.Peek(br.Buffered())
		n, v := scanHead(buf)
		if v == headPlain {
			if resp := plainResponse(br, buf[:n], req); resp != nil {
				br.Discard(n)
				return resp, nil
			}
		}
		if v != headPartial || len(buf) >= br.Size() {
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

// What scanHead makes of the bytes of a response so far.
const (
	headPartial  = iota // plain so far, the head not yet whole
	headPlain           // a whole head, plain (its first n bytes)
	headNotPlain        // for net/http's reader
)

// scanHead looks at the start of a response for a plain head: a status
// line "HTTP/1.x ddd reason", then header lines "Name: value", every line
// ended by CRLF, then an empty line. Plain means net/http's reader splits
// it into the same lines and takes every field: no bare CR or LF, no line
// starting with whitespace (obs-fold, or a leading space net/http
// refuses), a name that is a token (so no space before the colon), a
// value of bytes net/http accepts (no control byte but tab, no NUL, no
// DEL). A line is judged as soon as it is whole, so that a head net/http's
// reader would refuse at its first line is not waited on to its end.
func scanHead(buf []byte) (int, int) {
	pos := 0
	for i := 0; ; i++ {
		j := bytes.IndexByte(buf[pos:], '\n')
		if j < 0 {
			return 0, headPartial
		}
		line := buf[pos : pos+j]
		pos += j + 1
		if len(line) == 0 || line[len(line)-1] != '\r' {
			return 0, headNotPlain // a bare LF ends this line
		}
		line = line[:len(line)-1]
		if bytes.IndexByte(line, '\r') >= 0 {
			return 0, headNotPlain
		}
		switch {
		case i == 0:
			if !plainStatusLine(line) {
				return 0, headNotPlain
			}
		case len(line) == 0:
			return pos, headPlain
		case !plainFieldLine(line):
			return 0, headNotPlain
		}
	}
}

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

// plainFieldLine reports whether line is a header field net/http takes as
// it is: a token, a colon, and value bytes it accepts.
func plainFieldLine(line []byte) bool {
	k, v, ok := bytes.Cut(line, []byte{':'})
	if !ok || len(k) == 0 {
		return false
	}
	for _, c := range k {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
	}
	for _, c := range v {
		if c != '\t' && (c < ' ' || c == 0x7f) {
			return false
		}
	}
	return true
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
func plainResponse(br *bufio.Reader, head []byte, req *http.Request) *http.Response {
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
	h := make(http.Header, strings.Count(s, "\n")-2)
	values := r.values[:]
	for rest := s[end+2:]; ; {
		end := strings.Index(rest, "\r\n")
		if end == 0 {
			break
		}
		k, v, _ := strings.Cut(rest[:end], ":")
		rest = rest[end+2:]
		key := http.CanonicalHeaderKey(k) // no allocation when k is already canonical
		v = strings.Trim(v, " \t")
		vv, ok := h[key]
		if !ok && len(values) > 0 {
			vv, values = values[:1:1], values[1:]
			vv[0] = v
			h[key] = vv
			continue
		}
		h[key] = append(vv, v)
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
	n, ok := plainLength(cl[0])
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

// plainLength parses a Content-Length of 1 to 18 decimal digits, which
// net/http reads as the same number.
func plainLength(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
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
