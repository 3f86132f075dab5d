package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/net/http/httpguts"
)

// The head reader replaces http.ReadRequest for plain heads; these tests
// hold it to what net/http's server makes of the same bytes: the same
// verdict, the same request, the same body, and the same bytes left on
// the connection after it.

// headOutcome is everything a handler and the next request see.
type headOutcome struct {
	Refused                   bool
	Method, URL, RequestURI   string
	URLParts                  url.URL
	Proto                     string
	ProtoMajor, ProtoMinor    int
	Header, Trailer           http.Header
	ContentLength             int64
	TransferEncoding          []string
	Close                     bool
	Host                      string
	NoBody                    bool
	Body                      string
	BodyUnexpectedEOF, BodyOK bool
	Rest                      string // left on the connection, when the body ended well
}

func source(data []byte, trickle bool) *bufio.Reader {
	var src io.Reader = bytes.NewReader(data)
	if trickle {
		src = iotest.OneByteReader(src)
	}
	return bufio.NewReaderSize(src, 4<<10)
}

// describe reads req's body through to its end and says what was seen.
func describe(req *http.Request, br *bufio.Reader) headOutcome {
	o := headOutcome{
		Method: req.Method, URL: req.URL.String(), URLParts: *req.URL, RequestURI: req.RequestURI, Proto: req.Proto,
		ProtoMajor: req.ProtoMajor, ProtoMinor: req.ProtoMinor, Header: req.Header,
		ContentLength: req.ContentLength, TransferEncoding: req.TransferEncoding,
		Close: req.Close, Host: req.Host, NoBody: req.Body == http.NoBody,
	}
	body, err := io.ReadAll(req.Body)
	o.Body = string(body)
	o.Trailer = req.Trailer
	switch {
	case err == nil:
		o.BodyOK = true
		rest, _ := io.ReadAll(br)
		o.Rest = string(rest)
	case errors.Is(err, io.ErrUnexpectedEOF):
		o.BodyUnexpectedEOF = true
	}
	return o
}

// ours is what this package's reader and checks make of data.
func ours(data []byte, trickle bool) headOutcome {
	br := source(data, trickle)
	x, err := readHead(br, false, 1<<20, nil)
	if err == errHeadTooLong {
		br = grow(br, br, 1<<20)
		x, err = readHead(br, false, 1<<20, nil)
	}
	if err != nil {
		return headOutcome{Refused: true}
	}
	if checkRequest(x) != nil {
		return headOutcome{Refused: true}
	}
	x.body.init(nil, x, br)
	if x.body.none {
		if x.plain {
			x.req.Body = http.NoBody
		}
	} else {
		x.req.Body = &x.body
	}
	return describe(x.req, br)
}

// theirs is what net/http's server makes of data: http.ReadRequest, then
// the checks of its conn.readRequest (a protocol other than HTTP/1.x
// refused, Host required in HTTP/1.1 and valid, every field name a token
// and every value free of control bytes), then the Host field dropped.
// http.ReadRequest drops the Host fields, which the server's own reader
// keeps for its checks: they are read here as net/http reads a header
// block, with net/textproto. Two differences are deliberate: net/http hands "PRI * HTTP/2.0" to the
// handler for an h2c upgrade it never makes, and the asterisk form with any method but OPTIONS
// (RFC 9112, section 3.2.4: the form is only for OPTIONS); this server refuses both.
func theirs(data []byte, trickle bool) headOutcome {
	br := source(data, trickle)
	req, err := http.ReadRequest(br)
	if err != nil || req.ProtoMajor != 1 || (req.RequestURI == "*" && req.Method != http.MethodOptions) {
		return headOutcome{Refused: true}
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	tp.ReadLine()
	fields, _ := tp.ReadMIMEHeader()
	hosts, ok := fields["Host"]
	if req.ProtoAtLeast(1, 1) && (!ok || len(hosts) == 0) && req.Method != "CONNECT" {
		return headOutcome{Refused: true}
	}
	if len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
		return headOutcome{Refused: true}
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return headOutcome{Refused: true}
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return headOutcome{Refused: true}
			}
		}
	}
	delete(req.Header, "Host")
	return describe(req, br)
}

func sameAsNetHTTP(t *testing.T, data []byte, trickle bool) {
	t.Helper()
	got, want := ours(data, trickle), theirs(data, trickle)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%.300q (trickle %v):\n got  %.500v\n want %.500v", data, trickle, got, want)
	}
}

var headCases = []string{
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhel",
	"GET /mcp?x=1&y=%20 HTTP/1.1\r\nhost: a:8080\r\naccept: text/event-stream\r\nX-Dup: 1\r\nx-dup: 2\r\n\r\n",
	"GET / HTTP/1.0\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n\r\n",
	"GET / HTTP/1.1\r\n\r\n",                               // no Host
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",         // two Hosts
	"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",                  // a bad Host
	"GET http://b/x HTTP/1.1\r\nHost: a\r\n\r\n",           // absolute form
	"GET / HTTP/1.1\r\nHost : a\r\n\r\n",                   // space before the colon
	"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n", // obs-fold
	"GET / HTTP/1.1\nHost: a\n\n",                          // bare LF
	"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",                 // bare CR
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",       // NUL
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n",       // CTL
	"GET / HTTP/1.1\r\nHost: a\r\nX: \xff\r\n\r\n",         // obs-text
	"GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
	"GET / HTTP/1\r\nHost: a\r\n\r\n",
	"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
	"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 \r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nhi",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n1\r\na\r\n0\r\nX-T: v\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET * HTTP/1.1\r\nHost: a\r\n\r\n",
	"CONNECT a:443 HTTP/1.1\r\n\r\n",
	"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n",
	"GET //a:b/c;d=e@f,g+h$i&j~k_l.m-n HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a!b'c(d)e*f HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a%2Fb HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a? HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a#f HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a/../b/./c HTTP/1.1\r\nHost: a\r\n\r\n",
	"",
	"GET / HTTP/1.1\r\nHost:\r\n\r\n", // an empty Host
	"GET / HTTP/1.1\r\nhOsT: a\r\nHost: a\r\n\r\n",          // two Hosts, one not canonical
	"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",          // two Hosts in HTTP/1.0
	"GET http://b/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", // absolute form, two Hosts
	"POST /mcp HTTP/1.1\r\nAccept: a\r\nAccept-Encoding: gzip\r\nConnection: keep-alive\r\nUser-Agent: u\r\n" +
		"host: a\r\nmcp-protocol-version: 2025-11-25\r\nmcp-session-id: s\r\nContent-Type: application/json\r\n" +
		"Content-Length: 2\r\n\r\n{}", // nine fields, Host among them, as httpx sends
}

func TestHeadSameAsNetHTTP(t *testing.T) {
	for _, c := range headCases {
		for _, trickle := range []bool{false, true} {
			sameAsNetHTTP(t, []byte(c), trickle)
		}
	}
	long := "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("v", 5000) + "\r\n\r\n"
	sameAsNetHTTP(t, []byte(long), false)
}

// The common request takes the plain path: if it went to net/http's
// reader the comparisons above would hold trivially.
func TestPlainHeadsAreParsedHere(t *testing.T) {
	for _, c := range []string{headCases[0], headCases[3], headCases[34], headCases[35]} {
		x, err := readHead(source([]byte(c), false), false, 1<<20, nil)
		if err != nil || !x.plain {
			t.Errorf("%q: plain %v, err %v", c, x != nil && x.plain, err)
		}
	}
}

func FuzzHead(f *testing.F) {
	for _, c := range headCases {
		f.Add([]byte(c), false)
	}
	// A Kelvin sign folds to "k" in Unicode but not in net/http, which
	// answers 501 to this coding: found by a review of the fuzz targets.
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chun\xe2\x84\xaaed\r\n\r\n0\r\n\r\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, trickle bool) {
		if len(data) > 8<<10 {
			return
		}
		sameAsNetHTTP(t, data, trickle)
	})
}

// plainTarget's URL is the one url.ParseRequestURI makes of the target,
// field for field, whenever it takes the target.
func samePlainTarget(t *testing.T, target string) {
	t.Helper()
	var got url.URL
	if !plainTarget(target, &got) {
		return
	}
	want, err := url.ParseRequestURI(target)
	if err != nil {
		t.Fatalf("%q: plainTarget took a target url.ParseRequestURI refuses: %v", target, err)
	}
	if !reflect.DeepEqual(got, *want) {
		t.Errorf("%q:\n got  %#v\n want %#v", target, got, *want)
	}
}

func TestPlainTargetSameAsNetURL(t *testing.T) {
	for _, target := range []string{"/", "/mcp", "//a", "///a", "/a:b", "//a:b@c", "/a;b=c", "/~u/x.y-z_w", "/$&+,;=@:"} {
		var u url.URL
		if !plainTarget(target, &u) {
			t.Errorf("%q not taken as a plain path", target)
		}
		samePlainTarget(t, target)
	}
	for _, target := range []string{"", "a", "*", "/a?b", "/a%41", "/a b", "/a#b", "/a!", "/a'", "/a(", "/a*", "/\x7f", "/\xff", "/a\\b"} {
		var u url.URL
		if plainTarget(target, &u) {
			t.Errorf("%q taken as a plain path", target)
		}
	}
}

func FuzzPlainTarget(f *testing.F) {
	for _, s := range []string{"/", "/mcp", "//a:b@c/d", "/a;b=c&d", "/a?b", "/%41"} {
		f.Add(s)
	}
	f.Fuzz(samePlainTarget)
}

// limitedHead is what readHead makes of data read with a limit: the
// bytes it took for a head (0 if none) and its verdict: "ok", "431",
// "414", or "refused" for any other error.
func limitedHead(data []byte, trickle, afterPost bool, limit int) (int, string) {
	br := source(data, trickle)
	_, err := readHead(br, afterPost, limit, nil)
	if err == errHeadTooLong {
		br = grow(br, br, limit)
		_, err = readHead(br, afterPost, limit, nil)
	}
	switch {
	case err == errTooLarge:
		return 0, "431"
	case err == errURITooLong:
		return 0, "414"
	case err != nil:
		return 0, "refused"
	}
	// What is left after the head: read off the reader the head came
	// from, which holds it and then the rest of data.
	rest, _ := io.ReadAll(br)
	return len(data) - len(rest), "ok"
}

// FuzzHeadLimit: readHead's verdict on a head under a limit depends on
// the bytes, not on how many of them are buffered (all of data at once,
// as for a head pipelined behind a body; or a byte at a time, as for one
// arriving alone), takes no head longer than the limit, and answers
// 431 or 414 only to bytes whose first limit hold no end of a head (an
// empty line, as net/textproto reads lines) or, for 414, no end of the
// request line. Under a limit past the whole of data the verdict is the
// unlimited one.
func FuzzHeadLimit(f *testing.F) {
	for i, c := range headCases {
		f.Add([]byte(c), false, 1+i*7%max(len(c), 1))
		f.Add([]byte(c), true, len(c)+1)
	}
	f.Add([]byte("GET /x HTTP/1.1\r\nHost: a\r\nX-Pad"+strings.Repeat("p", 5000)+"\r\n\r\n"), false, 1024)
	f.Add([]byte("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), true, 20)
	f.Fuzz(func(t *testing.T, data []byte, afterPost bool, limit int) {
		if len(data) > 12<<10 || limit < 1 || limit > 16<<10 {
			return
		}
		n, v := limitedHead(data, false, afterPost, limit)
		if n1, v1 := limitedHead(data, true, afterPost, limit); n1 != n || v1 != v {
			t.Fatalf("limit %d, post %v, %.200q: buffered %s after %d bytes, trickled %s after %d", limit, afterPost, data, v, n, v1, n1)
		}
		if n > limit {
			t.Fatalf("limit %d, post %v, %.200q: took a head of %d bytes", limit, afterPost, data, n)
		}
		if v == "431" || v == "414" {
			within := data[:min(len(data), limit)]
			for skip := 0; afterPost && skip < 4 && len(within) > 0 && (within[0] == '\r' || within[0] == '\n'); skip++ {
				within = within[1:]
			}
			if bytes.Contains(within, []byte("\n\n")) || bytes.Contains(within, []byte("\n\r\n")) ||
				(v == "414" && bytes.IndexByte(within, '\n') >= 0) {
				t.Fatalf("limit %d, post %v, %.200q: %s with the head's end within the limit", limit, afterPost, data, v)
			}
		}
		if limit > len(data) {
			if n2, v2 := limitedHead(data, false, afterPost, 1<<20); n2 != n || v2 != v {
				t.Fatalf("limit %d past the data, post %v, %.200q: %s after %d bytes, unlimited %s after %d", limit, afterPost, data, v, n, v2, n2)
			}
		}
	})
}

// TestManyFieldsCostNoMoreAllocations: a plain head with as many fields as
// a Node or browser client sends (with Authorization and trace context)
// costs what the header map's growth costs and no more. The Host field is
// kept out of the header, as net/http's server keeps it, so a head of nine
// fields (an MCP request with a session: Host and eight) makes a map of
// eight, which Go holds in its first group and costs what a head of two
// does; ten to sixteen cost what ten do, each field past the values
// plainHead keeps room for costs one more.
func TestManyFieldsCostNoMoreAllocations(t *testing.T) {
	names := []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Session-Id", "Content-Length",
		"Connection", "User-Agent", "Accept-Encoding", "Accept-Language", "Sec-Fetch-Mode", "Authorization",
		"Traceparent", "Tracestate", "Baggage", "X-Request-Id"}
	allocs := func(n int) float64 {
		head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
		for _, k := range names[:n] {
			v := "v"
			if k == "Content-Length" {
				v = "10"
			}
			head += k + ": " + v + "\r\n"
		}
		b := []byte(head + "\r\n")
		var p plainHead
		return testing.AllocsPerRun(50, func() {
			p = plainHead{}
			if !parsePlain(&p, b) {
				t.Fatalf("a plain head of %d fields was not parsed here", n+1)
			}
		})
	}
	small := allocs(1) // Host and one field
	for n := 2; n <= 8; n++ {
		if a := allocs(n); a != small {
			t.Errorf("a head of %d fields, Host among them, costs %v allocations, one of 2 %v", n+1, a, small)
		}
	}
	base := allocs(9) // ten fields: past the map's first group
	for n := 10; n <= len(names); n++ {
		if a := allocs(n); a != base {
			t.Errorf("a head of %d fields costs %v allocations, one of 10 %v", n+1, a, base)
		}
	}
}
