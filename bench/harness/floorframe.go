package harness

import "bytes"

// frameKind is what the floor's framing functions found at the start of
// the bytes they were given.
type frameKind int

const (
	// needMore: the bytes end before the element does.
	needMore frameKind = iota
	// sized: a head (or chunk line, or trailer section) of n bytes, then
	// length bytes of body (0 for a chunk line's last chunk).
	sized
	// chunked: a head of n bytes, then a chunked body.
	chunked
	// bad: nothing the floor can frame (malformed, or framed by the end
	// of the connection, or a tunnel).
	bad
)

// frame is what frameHead, frameChunkLine and frameTrailers found. n never
// exceeds the bytes they were given.
type frame struct {
	kind   frameKind
	n      int
	length int64
	// status is a reply's status code (0 for a request).
	status int
	// headReq: the request's method is HEAD, so its reply has no body.
	headReq bool
}

var crlf = []byte("\r\n")

// maxDigits bounds a Content-Length or chunk size, far below overflow.
const maxDigits = 15

// frameHead frames the HTTP/1.1 message whose head starts p (RFC 9112):
// the head ends at the first empty line; a request is sized by its
// Content-Length, chunked by a Transfer-Encoding whose last coding is
// chunked, and has no body without either (section 6.3); a reply to HEAD
// (headReq) and a 1xx, 204 or 304 reply have no body whatever their fields
// say, and other replies are sized or chunked as requests are, but one with
// neither field is bad (its body ends with the connection). Both fields at
// once, a Content-Length list of different values, a Transfer-Encoding
// that does not end in chunked, CONNECT and 101 (tunnels), obsolete line
// folding, bare CR or LF and a field name followed by white space are bad.
// Empty lines before a request line are skipped (section 2.2).
func frameHead(p []byte, reply, headReq bool) frame {
	skip := 0
	if !reply {
		for bytes.HasPrefix(p[skip:], crlf) {
			skip += 2
		}
		if skip == len(p) || (len(p)-skip == 1 && p[skip] == '\r') {
			return frame{kind: needMore}
		}
	}
	end := bytes.Index(p[skip:], []byte("\r\n\r\n"))
	if end < 0 {
		return frame{kind: needMore}
	}
	n := skip + end + 4
	line, fields, _ := bytes.Cut(p[skip:n-2], crlf)
	f := frame{kind: sized, n: n}
	if reply {
		status, ok := statusLine(line)
		if !ok || status == 101 {
			return frame{kind: bad}
		}
		f.status = status
	} else {
		method, ok := requestLine(line)
		if !ok || string(method) == "CONNECT" {
			return frame{kind: bad}
		}
		f.headReq = string(method) == "HEAD"
	}
	var (
		length  int64 = -1
		te      bool
		lastTE  []byte
		chunks  int
		badLine bool
	)
	eachField(fields, func(name, value []byte) bool {
		switch {
		case name == nil:
			badLine = true
		case asciiEqualFold(name, "content-length"):
			for v := range bytes.SplitSeq(value, []byte(",")) {
				l, ok := digits(trimOWS(v))
				if !ok || (length >= 0 && l != length) {
					badLine = true
					return false
				}
				length = l
			}
		case asciiEqualFold(name, "transfer-encoding"):
			te = true
			for c := range bytes.SplitSeq(value, []byte(",")) {
				c = trimOWS(c)
				if len(c) == 0 {
					continue
				}
				if asciiEqualFold(c, "chunked") {
					chunks++
				}
				lastTE = c
			}
		}
		return !badLine
	})
	if badLine {
		return frame{kind: bad}
	}
	if reply && (headReq || f.status < 200 || f.status == 204 || f.status == 304) {
		return f
	}
	switch {
	case te && length >= 0:
		return frame{kind: bad}
	case te:
		if lastTE == nil || !asciiEqualFold(lastTE, "chunked") || chunks != 1 {
			return frame{kind: bad}
		}
		f.kind = chunked
	case length >= 0:
		f.length = length
	case reply:
		return frame{kind: bad}
	}
	return f
}

// frameChunkLine frames the chunk-size line starting p (RFC 9112 section
// 7.1): hexadecimal digits, extensions, CRLF. length is the chunk's size;
// 0 is the last chunk, which the trailer section follows.
func frameChunkLine(p []byte) frame {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		if bytes.IndexByte(p, '\r') >= 0 && p[len(p)-1] != '\r' {
			return frame{kind: bad}
		}
		return frame{kind: needMore}
	}
	if i == 0 || p[i-1] != '\r' {
		return frame{kind: bad}
	}
	line := p[:i-1]
	h := 0
	var size int64
	for h < len(line) && h < maxDigits+1 && hexVal(line[h]) >= 0 {
		size = size<<4 | int64(hexVal(line[h]))
		h++
	}
	if h == 0 || h > maxDigits {
		return frame{kind: bad}
	}
	ext := bytes.TrimLeft(line[h:], " \t")
	if len(ext) > 0 && (ext[0] != ';' || bytes.ContainsAny(ext, "\r\x00")) {
		return frame{kind: bad}
	}
	return frame{kind: sized, n: i + 1, length: size}
}

// frameTrailers frames the trailer section starting p, after the last
// chunk: field lines, then an empty line (RFC 9112 section 7.1.2).
func frameTrailers(p []byte) frame {
	if bytes.HasPrefix(p, crlf) {
		return frame{kind: sized, n: 2}
	}
	end := bytes.Index(p, []byte("\r\n\r\n"))
	if end < 0 {
		return frame{kind: needMore}
	}
	ok := true
	eachField(p[:end+2], func(name, _ []byte) bool {
		ok = name != nil
		return ok
	})
	if !ok {
		return frame{kind: bad}
	}
	return frame{kind: sized, n: end + 4}
}

// eachField calls fn with the name and value (white space trimmed) of each
// CRLF-terminated field line of p, or with a nil name for a malformed one
// (RFC 9112 section 5: a token, a colon at once, a value without CR, LF
// or NUL; no obsolete line folding), until fn returns false.
func eachField(p []byte, fn func(name, value []byte) bool) {
	for len(p) > 0 {
		line, rest, _ := bytes.Cut(p, crlf)
		p = rest
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) || bytes.ContainsAny(line[colon+1:], "\r\n\x00") {
			fn(nil, nil)
			return
		}
		if !fn(line[:colon], trimOWS(line[colon+1:])) {
			return
		}
	}
}

// requestLine parses method SP request-target SP HTTP/1.x and gives the
// method.
func requestLine(l []byte) ([]byte, bool) {
	method, rest, ok := bytes.Cut(l, []byte(" "))
	if !ok || !isToken(method) {
		return nil, false
	}
	target, version, ok := bytes.Cut(rest, []byte(" "))
	if !ok || len(target) == 0 || bytes.ContainsAny(target, " \t\r\n\x00") || !httpVersion(version) {
		return nil, false
	}
	return method, true
}

// statusLine parses HTTP/1.x SP 3DIGIT SP reason-phrase and gives the
// status code.
func statusLine(l []byte) (int, bool) {
	if len(l) < 13 || !httpVersion(l[:8]) || l[8] != ' ' || l[12] != ' ' || bytes.ContainsAny(l[13:], "\r\n\x00") {
		return 0, false
	}
	code := 0
	for _, c := range l[9:12] {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	return code, code >= 100
}

func httpVersion(v []byte) bool {
	return len(v) == 8 && bytes.HasPrefix(v, []byte("HTTP/1.")) && v[7] >= '0' && v[7] <= '9'
}

// digits parses 1*DIGIT of at most maxDigits digits.
func digits(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > maxDigits {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// isToken: one or more tchar (RFC 9110 section 5.6.2).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0) {
			return false
		}
	}
	return true
}

func trimOWS(b []byte) []byte { return bytes.Trim(b, " \t") }

// asciiEqualFold compares b with lower-case ASCII s, ignoring b's case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
