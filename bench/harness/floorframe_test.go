package harness

import (
	"bytes"
	"testing"
)

// TestFrameHead frames heads by RFC 9112's rules for a message's body
// length (section 6.3) and its syntax (sections 2 to 5), case by case.
func TestFrameHead(t *testing.T) {
	t.Parallel()
	const post = "POST /mcp HTTP/1.1\r\nHost: h\r\n"
	cases := []struct {
		name          string
		in            string
		reply, head   bool
		kind          frameKind
		n             int // -1: the whole input
		length        int64
		status        int
		headReqResult bool
	}{
		{name: "request, Content-Length", in: post + "Content-Length: 11\r\n\r\nhello world", kind: sized, n: len(post) + 22, length: 11},
		{name: "request, field name in any case", in: post + "cONTENT-lENGTH:7\r\n\r\n", kind: sized, n: -1, length: 7},
		{name: "request, neither field: no body", in: "GET / HTTP/1.1\r\nHost: h\r\n\r\nGET", kind: sized, n: 27},
		{name: "request, HEAD", in: "HEAD / HTTP/1.1\r\n\r\n", kind: sized, n: -1, headReqResult: true},
		{name: "request, chunked", in: post + "Transfer-Encoding: chunked\r\n\r\n5\r\n", kind: chunked, n: len(post) + 30},
		{name: "request, chunked last of two codings", in: post + "Transfer-Encoding: gzip, CHUNKED\r\n\r\n", kind: chunked, n: -1},
		{name: "request, chunked over two field lines", in: post + "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", kind: chunked, n: -1},
		{name: "request, empty lines before it", in: "\r\n\r\n" + post + "Content-Length: 0\r\n\r\n", kind: sized, n: -1},
		{name: "request, Content-Length list of one value", in: post + "Content-Length: 4, 4\r\nContent-Length: 4\r\n\r\n", kind: sized, n: -1, length: 4},
		{name: "request, head incomplete", in: post + "Content-Length: 4\r\n\r", kind: needMore},
		{name: "request, only empty lines", in: "\r\n\r\n\r", kind: needMore},
		{name: "request, both fields", in: post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", kind: bad},
		{name: "request, chunked not last", in: post + "Transfer-Encoding: chunked, gzip\r\n\r\n", kind: bad},
		{name: "request, chunked twice", in: post + "Transfer-Encoding: chunked, chunked\r\n\r\n", kind: bad},
		{name: "request, coding without chunked", in: post + "Transfer-Encoding: gzip\r\n\r\n", kind: bad},
		{name: "request, Content-Length values differ", in: post + "Content-Length: 4\r\nContent-Length: 5\r\n\r\n", kind: bad},
		{name: "request, Content-Length list differs", in: post + "Content-Length: 4, 5\r\n\r\n", kind: bad},
		{name: "request, Content-Length signed", in: post + "Content-Length: +4\r\n\r\n", kind: bad},
		{name: "request, Content-Length empty", in: post + "Content-Length: \r\n\r\n", kind: bad},
		{name: "request, Content-Length huge", in: post + "Content-Length: 99999999999999999999\r\n\r\n", kind: bad},
		{name: "request, white space before colon", in: post + "Content-Length : 4\r\n\r\n", kind: bad},
		{name: "request, obsolete line folding", in: post + "X-A: 1\r\n  2\r\n\r\n", kind: bad},
		{name: "request, bare LF in a field line", in: post + "X-A: 1\nX-B: 2\r\n\r\n", kind: bad},
		{name: "request, bare CR in a field line", in: post + "X-A: 1\rX-B: 2\r\n\r\n", kind: bad},
		{name: "request, NUL in a value", in: post + "X-A: 1\x002\r\n\r\n", kind: bad},
		{name: "request, no version", in: "GET /\r\n\r\n", kind: bad},
		{name: "request, HTTP/2.0", in: "GET / HTTP/2.0\r\n\r\n", kind: bad},
		{name: "request, CONNECT", in: "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", kind: bad},
		{name: "reply, Content-Length", in: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", reply: true, kind: sized, n: 38, length: 2, status: 200},
		{name: "reply, empty reason", in: "HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n", reply: true, kind: sized, n: -1, status: 404},
		{name: "reply, chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", reply: true, kind: chunked, n: -1, status: 200},
		{name: "reply to HEAD", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", reply: true, head: true, kind: sized, n: -1, status: 200},
		{name: "reply 204", in: "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", reply: true, kind: sized, n: -1, status: 204},
		{name: "reply 304", in: "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", reply: true, kind: sized, n: -1, status: 304},
		{name: "reply 100", in: "HTTP/1.1 100 Continue\r\n\r\n", reply: true, kind: sized, n: -1, status: 100},
		{name: "reply 101", in: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", reply: true, kind: bad},
		{name: "reply framed by the close", in: "HTTP/1.1 200 OK\r\n\r\nbody", reply: true, kind: bad},
		{name: "reply, no reason separator", in: "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", reply: true, kind: bad},
		{name: "reply, status of two digits", in: "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n", reply: true, kind: bad},
		{name: "reply, empty lines before it", in: "\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", reply: true, kind: bad},
	}
	for _, tc := range cases {
		f := frameHead([]byte(tc.in), tc.reply, tc.head)
		n := tc.n
		if n < 0 {
			n = len(tc.in)
		}
		if tc.kind == needMore || tc.kind == bad {
			n = 0
		}
		want := frame{kind: tc.kind, n: n, length: tc.length, status: tc.status, headReq: tc.headReqResult}
		if tc.kind == needMore || tc.kind == bad {
			want = frame{kind: tc.kind}
		}
		if f != want {
			t.Errorf("%s: frameHead(%q) = %+v, want %+v", tc.name, tc.in, f, want)
		}
	}
}

// TestFrameChunkLine frames chunk-size lines (RFC 9112 section 7.1).
func TestFrameChunkLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		kind   frameKind
		n      int
		length int64
	}{
		{"1a\r\ndata", sized, 4, 26},
		{"1A;name=value\r\n", sized, 15, 26},
		{"5 ;ext\r\n", sized, 8, 5},
		{"0\r\n\r\n", sized, 3, 0},
		{"00000\r\n", sized, 7, 0},
		{"7fffffffffffffff\r\n", bad, 0, 0},
		{"5", needMore, 0, 0},
		{"5\r", needMore, 0, 0},
		{"5;a=b", needMore, 0, 0},
		{"5\n", bad, 0, 0},
		{"\r\n", bad, 0, 0},
		{"g\r\n", bad, 0, 0},
		{"-5\r\n", bad, 0, 0},
		{"5 x\r\n", bad, 0, 0},
		{"5\rx\r\n", bad, 0, 0},
	}
	for _, tc := range cases {
		want := frame{kind: tc.kind, n: tc.n, length: tc.length}
		if f := frameChunkLine([]byte(tc.in)); f != want {
			t.Errorf("frameChunkLine(%q) = %+v, want %+v", tc.in, f, want)
		}
	}
}

// TestFrameTrailers frames the trailer section after the last chunk (RFC
// 9112 section 7.1.2).
func TestFrameTrailers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		kind frameKind
		n    int
	}{
		{"\r\nHTTP/1.1", sized, 2},
		{"Foo: bar\r\n\r\n", sized, 12},
		{"Foo: bar\r\nBaz: 1\r\n\r\nnext", sized, 20},
		{"", needMore, 0},
		{"\r", needMore, 0},
		{"Foo: bar\r\n", needMore, 0},
		{"Foo bar\r\n\r\n", bad, 0},
		{" Foo: bar\r\n\r\n", bad, 0},
	}
	for _, tc := range cases {
		want := frame{kind: tc.kind, n: tc.n}
		if f := frameTrailers([]byte(tc.in)); f != want {
			t.Errorf("frameTrailers(%q) = %+v, want %+v", tc.in, f, want)
		}
	}
}

// checkFraming holds every framing function to what RFC 9112 makes true of
// any input: an element ends at its own terminator (an empty line after a
// head or a trailer section, CRLF after a chunk line), so a framed element
// is never longer than the bytes given, ends with that terminator, is not
// framed one byte short of it, and frames the same whatever follows it; a
// verdict of bad, given once the element is complete, stands whatever
// follows too.
func checkFraming(t *testing.T, name string, p []byte, fn func([]byte) frame, end string) {
	f := fn(p)
	switch f.kind {
	case needMore, bad:
		if f.n != 0 || f.length != 0 {
			t.Fatalf("%s(%q) = %+v: no length without a frame", name, p, f)
		}
		if f.kind == bad {
			if g := fn(append(bytes.Clone(p), "\r\n\r\n0\r\n\r\n"...)); g.kind != bad {
				t.Fatalf("%s(%q) is bad, but %+v with more bytes after it", name, p, g)
			}
		}
		return
	}
	if f.n <= 0 || f.n > len(p) || f.length < 0 {
		t.Fatalf("%s(%q) = %+v: outside the %d bytes given", name, p, f, len(p))
	}
	if !bytes.HasSuffix(p[:f.n], []byte(end)) {
		t.Fatalf("%s(%q) = %+v: the element does not end with %q", name, p, f, end)
	}
	if g := fn(p[:f.n]); g != f {
		t.Fatalf("%s(%q) = %+v, but %+v without the bytes after it", name, p, f, g)
	}
	if g := fn(append(bytes.Clone(p), "X-More: 1\r\n\r\n"...)); g != f {
		t.Fatalf("%s(%q) = %+v, but %+v with more bytes after it", name, p, f, g)
	}
	if g := fn(p[:f.n-1]); g.kind != needMore {
		t.Fatalf("%s(%q) = %+v, but %+v one byte short", name, p, f, g)
	}
}

// FuzzFrameHead holds frameHead, frameChunkLine and frameTrailers to
// checkFraming on any bytes.
func FuzzFrameHead(f *testing.F) {
	for _, s := range []string{
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\n\r\n",
		"1a;x=y\r\n",
		"Trailer: 1\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n",
	} {
		f.Add([]byte(s), false, false)
		f.Add([]byte(s), true, false)
	}
	f.Fuzz(func(t *testing.T, p []byte, reply, headReq bool) {
		checkFraming(t, "frameHead", p, func(b []byte) frame { return frameHead(b, reply, headReq) }, "\r\n\r\n")
		checkFraming(t, "frameChunkLine", p, frameChunkLine, "\r\n")
		checkFraming(t, "frameTrailers", p, frameTrailers, "\r\n")
	})
}

// TestFrameHeadEveryPrefix: no proper prefix of a complete head is framed
// (a head ends only at its empty line).
func TestFrameHeadEveryPrefix(t *testing.T) {
	t.Parallel()
	head := "\r\nPOST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	for i := range len(head) {
		if f := frameHead([]byte(head[:i]), false, false); f.kind != needMore {
			t.Errorf("frameHead(%q) = %+v, want needMore", head[:i], f)
		}
	}
	if f := frameHead([]byte(head), false, false); f.kind != chunked || f.n != len(head) {
		t.Errorf("frameHead(%q) = %+v, want chunked of %d bytes", head, f, len(head))
	}
}

// TestFrameAllocatesNothing: framing a request, a chunked reply's head, a
// chunk line and a trailer section allocates nothing, so the floor's cost
// per request is its system calls and scheduling, not garbage.
func TestFrameAllocatesNothing(t *testing.T) {
	req := []byte("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 5, 5\r\n\r\nhello")
	resp := []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
	line, trailers := []byte("1a;x=y\r\n"), []byte("A: 1\r\n\r\n")
	allocs := testing.AllocsPerRun(100, func() {
		if frameHead(req, false, false).kind != sized || frameHead(resp, true, false).kind != chunked ||
			frameChunkLine(line).kind != sized || frameTrailers(trailers).kind != sized {
			t.Fatal("a framing failed")
		}
	})
	if allocs != 0 {
		t.Errorf("framing allocates %.1f times per message, want 0", allocs)
	}
}
