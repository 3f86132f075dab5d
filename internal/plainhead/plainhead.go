// Package plainhead owns what the sidecar's two HTTP/1.1 head readers share:
// internal/h1 reads the requests of the MCP listener and internal/hop the
// upstream's responses, each parsing a "plain" head itself and handing any
// other, unread, to net/http's reader. A plain head is one net/http's
// reader splits into the same lines and whose fields it takes as they are:
// every line ended by CRLF, no bare CR or LF, no line starting with
// whitespace (obs-fold), a field name that is a token (so no space before
// the colon), value bytes net/http accepts (no control byte but tab, no
// DEL). Scan finds such a head (ScanFrom resumes it as the head comes in
// pieces), FieldLine judges one field line, Fields
// (or FieldsInto, into a map the caller kept; RequestFields, with the Host
// fields apart) builds its header, Length reads a Content-Length both readers take as
// net/http would.
//
// It also owns EqualFold, the one comparison of HTTP tokens (a transfer
// coding, a Connection option, a field name, a media type, a host name)
// the sidecar makes: ASCII letters only, as RFC 9110 5.6.2 defines tokens
// and as net/http compares them. Every package that compares a token asks
// it rather than strings.EqualFold, whose Unicode folding takes the Kelvin
// sign for "k" and the long s for "s"; whether a comma-separated list holds
// a token is httpguts.HeaderValuesContainsToken's, as in net/http.
//
// It is pure: bytes in, verdicts out. It must not read a connection,
// parse a first line (each reader judges its own: a request line, a status
// line) or build a request or a response around the header.
package plainhead

import (
	"bytes"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// What Scan makes of the bytes of a head so far.
const (
	Partial  = iota // plain so far, the head not yet whole
	Plain           // a whole head, plain (its first n bytes)
	NotPlain        // for net/http's reader
)

// Scan looks at the start of buf for a plain head whose first line
// firstLine accepts, then header lines, then an empty line. It returns the
// head's length and Plain, or Partial while the head is plain so far but
// not whole, or NotPlain. A line is judged as soon as it is whole, so that
// a head net/http's reader would refuse at its first line is not waited
// on to its end.
func Scan(buf []byte, firstLine func([]byte) bool) (int, int) {
	n, v, _ := ScanFrom(buf, 0, firstLine)
	return n, v
}

// ScanFrom is Scan resumed at from: 0, or the next an earlier call
// returned with Partial for the start of the same bytes (buf holding
// those bytes and maybe more). It returns, besides Scan's answer, next:
// where the first line not yet whole starts, every line before it judged
// plain. A reader that gets a head in pieces so judges each line once,
// where calling Scan on every piece judged the whole head again each
// time: work in the head's length times its pieces.
func ScanFrom(buf []byte, from int, firstLine func([]byte) bool) (n, verdict, next int) {
	pos := from
	for {
		j := bytes.IndexByte(buf[pos:], '\n')
		if j < 0 {
			return 0, Partial, pos
		}
		start := pos
		line := buf[pos : pos+j]
		pos += j + 1
		if len(line) == 0 || line[len(line)-1] != '\r' {
			return 0, NotPlain, start // a bare LF ends this line
		}
		line = line[:len(line)-1]
		if bytes.IndexByte(line, '\r') >= 0 {
			return 0, NotPlain, start
		}
		switch {
		case start == 0:
			if !firstLine(line) {
				return 0, NotPlain, start
			}
		case len(line) == 0:
			return pos, Plain, start
		case !FieldLine(line):
			return 0, NotPlain, start
		}
	}
}

// FieldLine reports whether line is a header field net/http takes as it
// is: a token, a colon, and value bytes it accepts.
func FieldLine(line []byte) bool {
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

// Fields builds the header of a plain head (one Scan found Plain) from
// fields, the head after its first line's CRLF, as net/http's reader
// builds it: names canonical, values trimmed of spaces and tabs, repeated
// names in order. The first value of each name takes a one-element slice
// of values while there are any (room the caller keeps beside the head),
// so a usual head costs the map alone.
func Fields(fields string, values []string) http.Header {
	return FieldsInto(make(http.Header, sizeHint(fields, 1)), fields, values)
}

// FieldsInto is Fields building into h, an empty map the caller gives
// (one a reader kept from an earlier head, cleared), and returns it.
func FieldsInto(h http.Header, fields string, values []string) http.Header {
	h, _ = fieldsInto(h, fields, values, false)
	return h
}

// RequestFields is Fields for a request's head as net/http's server reads
// one: the values of its Host fields go not into the header, which that
// server drops them from, but into hosts, in order. So a head of nine
// fields, Host among them, makes a header of eight, which a Go map holds
// in its first group: the ninth entry costs three allocations.
func RequestFields(fields string, values []string) (h http.Header, hosts []string) {
	return fieldsInto(make(http.Header, sizeHint(fields, 2)), fields, values, true)
}

// sizeHint is the size to make a header map of for fields, less fewer: its
// line count, at most 1000 as net/textproto's reader caps it, so that a head
// of many empty fields does not make a map far larger than its bytes.
func sizeHint(fields string, fewer int) int {
	return min(max(strings.Count(fields, "\n")-fewer, 0), 1000)
}

// fieldsInto builds into h as FieldsInto does, the Host fields into hosts
// when hostsApart.
func fieldsInto(h http.Header, fields string, values []string, hostsApart bool) (http.Header, []string) {
	var hosts []string
	for rest := fields; ; {
		end := strings.IndexByte(rest, '\n') // Scan saw every line end in CRLF
		if end <= 1 {
			break // the empty line that ends the head
		}
		line := rest[:end-1]
		rest = rest[end+1:]
		colon := strings.IndexByte(line, ':')
		key := canonicalKey(line[:colon])
		v := trim(line[colon+1:])
		if hostsApart && key == "Host" {
			if hosts == nil && len(values) > 0 {
				hosts, values = values[:0:1], values[1:]
			}
			hosts = append(hosts, v)
			continue
		}
		vv, ok := h[key]
		if !ok && len(values) > 0 {
			vv, values = values[:1:1], values[1:]
			vv[0] = v
			h[key] = vv
			continue
		}
		h[key] = append(vv, v)
	}
	return h, hosts
}

// trim cuts the spaces and tabs around a field's value, as net/textproto
// does.
func trim(v string) string {
	i, j := 0, len(v)
	for i < j && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	for j > i && (v[j-1] == ' ' || v[j-1] == '\t') {
		j--
	}
	return v[i:j]
}

// canonicalKey is http.CanonicalHeaderKey of k, a token (Scan judged it):
// k itself when it is canonical already, else its canonical form, which
// for the names of knownKeys costs no allocation. Clients that write every
// name in lower case (any client on Node's fetch) would otherwise pay one
// per field whose name net/textproto does not keep a copy of, such as
// Mcp-Protocol-Version.
func canonicalKey(k string) string {
	upper := true
	i := 0
	for ; i < len(k); i++ {
		c := k[i]
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			break
		}
		upper = c == '-'
	}
	if i == len(k) {
		return k
	}
	var room [48]byte
	if len(k) > len(room) {
		return http.CanonicalHeaderKey(k)
	}
	b := room[:len(k)]
	copy(b, k)
	for ; i < len(b); i++ {
		c := b[i]
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
		upper = c == '-'
	}
	if known, ok := knownKeys[string(b)]; ok {
		return known
	}
	return string(b)
}

// knownKeys holds, canonical, the names of the fields MCP traffic
// carries: the protocol's own, the common HTTP ones, and every name
// net/textproto keeps a shared copy of, so that no name costs more here
// than http.CanonicalHeaderKey would (TestKnownKeysCoverNetHTTPs).
var knownKeys = func() map[string]string {
	names := []string{
		// MCP's own, and what its clients and servers send around them.
		"Authorization", "Baggage", "Content-Encoding", "Keep-Alive", "Last-Event-Id",
		"Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Mcp-Session-Id", "Origin",
		"Proxy-Authorization", "Sec-Fetch-Mode", "Te", "Traceparent", "Tracestate",
		"Trailer", "Transfer-Encoding", "Upgrade", "Vary", "Www-Authenticate",
		"X-Forwarded-Host", "X-Forwarded-Proto", "X-Request-Id",
		// The names net/textproto shares.
		"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language", "Accept-Ranges",
		"Cache-Control", "Cc", "Connection", "Content-Id", "Content-Language",
		"Content-Length", "Content-Transfer-Encoding", "Content-Type", "Cookie", "Date",
		"Dkim-Signature", "Etag", "Expires", "From", "Host", "If-Modified-Since",
		"If-None-Match", "In-Reply-To", "Last-Modified", "Location", "Message-Id",
		"Mime-Version", "Pragma", "Received", "Return-Path", "Server", "Set-Cookie",
		"Subject", "To", "User-Agent", "Via", "X-Forwarded-For", "X-Imforwards",
		"X-Powered-By",
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

// Length parses a Content-Length of 1 to 18 decimal digits, which net/http
// reads as the same number.
func Length(s string) (int64, bool) {
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

// EqualFold reports whether s and t are equal ignoring the case of ASCII
// letters, as net/http compares HTTP tokens: a byte that is not an ASCII
// letter must be the same byte in both. Unlike strings.EqualFold it folds
// no other character, so "chun\u212aed" (a Kelvin sign) is not "chunked"
// and "clo\u017fe" (a long s) is not "close".
func EqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lower(s[i]) != lower(t[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
