package h1

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
)

// scanHead looks at the start of a request for a plain head
// (internal/plainhead) whose first line is "METHOD /target HTTP/1.x",
// resuming at from as plainhead.ScanFrom does.
func scanHead(buf []byte, from int) (n, verdict, next int) {
	looked(len(buf) - from)
	return plainhead.ScanFrom(buf, from, plainRequestLine)
}

// plainRequestLine reports whether line is a token, a space, a target in
// origin form (a slash, then bytes above space but DEL), a space and
// "HTTP/1.1" or "HTTP/1.0".
func plainRequestLine(line []byte) bool {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || len(line) < sp+11 {
		return false
	}
	for _, c := range line[:sp] {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
	}
	proto := line[len(line)-9:]
	if string(proto) != " HTTP/1.1" && string(proto) != " HTTP/1.0" {
		return false
	}
	target := line[sp+1 : len(line)-9]
	if len(target) == 0 || target[0] != '/' {
		return false
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// plainHead is a request parsed here, held with the first values of its
// header in one allocation: room for 16 names, as many as a browser's or
// Node's fetch sends with an Authorization and trace context (13–15,
// Host among them), where each name past the room costs an allocation.
type plainHead struct {
	req    http.Request
	url    url.URL
	values [16]string
	// hosts are the Host fields' values, kept out of the header; for a
	// head net/http's reader took, headFields fills them (net/textproto
	// makes no key without a value).
	hosts []string
}

// parsePlain builds into p the request http.ReadRequest makes of head, a
// plain head (scanHead), and reports whether it could: false for one whose
// target net/url refuses, whose framing is not the plain case (more than
// one Content-Length, one that is not 1 to 18 decimal digits, a
// Transfer-Encoding on HTTP/1.1 other than one "chunked" without a
// Content-Length), with more than one Host, or with a Trailer or Pragma
// field (net/http makes more of those). Such a head goes to net/http's
// reader, which refuses it or reads it its own way. The request's Body is
// left for the caller; ContentLength is -1 and TransferEncoding
// ["chunked"] for a chunked body.
func parsePlain(p *plainHead, head []byte) bool {
	s := string(head)
	end := strings.Index(s, "\r\n")
	line := s[:end]
	sp := strings.IndexByte(line, ' ')
	r := &p.req
	r.Method = line[:sp]
	r.RequestURI = line[sp+1 : len(line)-9]
	r.Proto = line[len(line)-8:]
	r.ProtoMajor, r.ProtoMinor = 1, int(line[len(line)-1]-'0')
	u := &p.url
	if !plainTarget(r.RequestURI, u) {
		var err error
		if u, err = url.ParseRequestURI(r.RequestURI); err != nil {
			return false
		}
	}
	r.URL = u
	h, hosts := plainhead.RequestFields(s[end+2:], p.values[:])
	r.Header = h
	p.hosts = hosts
	if _, ok := h["Trailer"]; ok {
		return false
	}
	if _, ok := h["Pragma"]; ok {
		return false
	}
	if len(hosts) > 1 {
		return false
	}
	r.Host = u.Host
	if r.Host == "" && len(hosts) > 0 {
		r.Host = hosts[0]
	}
	conn := h["Connection"]
	hasClose := httpguts.HeaderValuesContainsToken(conn, "close")
	if r.ProtoMinor == 0 {
		r.Close = hasClose || !httpguts.HeaderValuesContainsToken(conn, "keep-alive")
	} else {
		r.Close = hasClose
	}
	cl := h["Content-Length"]
	if te, ok := h["Transfer-Encoding"]; ok {
		if r.ProtoMinor == 0 {
			return false // net/http ignores and drops it: its reader's case
		}
		if len(te) != 1 || len(cl) != 0 || !plainhead.EqualFold(te[0], "chunked") {
			return false
		}
		delete(h, "Transfer-Encoding")
		r.TransferEncoding = []string{"chunked"}
		r.ContentLength = -1
		return true
	}
	switch len(cl) {
	case 0:
		r.ContentLength = 0
	case 1:
		n, ok := plainhead.Length(cl[0])
		if !ok {
			return false
		}
		r.ContentLength = n
	default:
		return false
	}
	return true
}

// plainTarget builds into u what url.ParseRequestURI makes of target, a
// path of the bytes it takes as they are: a slash, then letters, digits,
// "-._~" and "$&+,/:;=@" (RFC 3986's unreserved bytes and the sub-delims
// and separators net/url leaves unescaped in a path). It reports whether
// target was such a path; any other (a query, a percent escape, a byte
// net/url would escape) is left to url.ParseRequestURI.
func plainTarget(target string, u *url.URL) bool {
	if len(target) == 0 || target[0] != '/' {
		return false
	}
	for i := 1; i < len(target); i++ {
		if !pathByte[target[i]] {
			return false
		}
	}
	*u = url.URL{Path: target}
	return true
}

// pathByte holds the bytes plainTarget takes.
var pathByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "-._~$&+,/:;=@" {
		t[c] = true
	}
	return t
}()

// A refusal is a request the server answers itself and then closes the
// connection: its status and, for some, a reason net/http gives after the
// status text.
type refusal struct {
	code   int
	reason string
}

func (e *refusal) Error() string {
	if e.reason == "" {
		return http.StatusText(e.code)
	}
	return http.StatusText(e.code) + ": " + e.reason
}

// checkRequest makes the checks net/http's server makes of a request its
// reader took, and drops the Host field as it does. A head parsed here
// has field names and values known good.
func checkRequest(x *exchange) error {
	r, plain, hosts := x.req, x.plain, x.head.hosts
	if r.ProtoMajor != 1 {
		return &refusal{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	}
	if r.ProtoMinor >= 1 && len(hosts) == 0 && r.Method != http.MethodConnect {
		return &refusal{http.StatusBadRequest, "missing required Host header"}
	}
	if r.RequestURI == "*" && r.Method != http.MethodOptions {
		// RFC 9112, section 3.2.4: the asterisk form is only for OPTIONS
		// (net/http passes it to the handler).
		return &refusal{http.StatusBadRequest, "asterisk-form request-target without OPTIONS"}
	}
	if len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
		return &refusal{http.StatusBadRequest, "malformed Host header"}
	}
	if !plain {
		for k, vv := range r.Header {
			if !httpguts.ValidHeaderFieldName(k) {
				return &refusal{http.StatusBadRequest, "invalid header name"}
			}
			for _, v := range vv {
				if !httpguts.ValidHeaderFieldValue(v) {
					return &refusal{http.StatusBadRequest, "invalid header value"}
				}
			}
		}
	}
	delete(r.Header, "Host")
	return nil
}
