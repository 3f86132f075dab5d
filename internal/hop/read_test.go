package hop

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
)

// The response reader replaces http.ReadResponse for plain heads; these
// tests hold it to what http.ReadResponse does on the same bytes: the same
// verdict, the same response, the same body, and the same bytes left on
// the connection after it.

// readOutcome is everything a caller of a response reader sees.
type readOutcome struct {
	Refused                 bool
	Status                  string
	StatusCode              int
	Proto                   string
	ProtoMajor, ProtoMinor  int
	Header                  http.Header
	ContentLength           int64
	Close, NoBody           bool
	TransferEncoding        []string
	Trailer                 http.Header
	Body                    string
	BodyUnexpectedEOF       bool   // the body ended before its length
	BodyErr                 string // another error while reading it
	AfterBody, AfterBodyErr string // a read after the body's end
	Rest                    string // what is left on the connection
}

// outcome reads data as one response with read, and its body through to
// the end, over a buffer the size of a connection's (one byte per read
// from the connection when trickle is set).
func outcome(data []byte, method string, trickle bool, read func(*bufio.Reader, *http.Request) (*http.Response, error)) readOutcome {
	var src io.Reader = bytes.NewReader(data)
	if trickle {
		src = iotest.OneByteReader(src)
	}
	br := bufio.NewReaderSize(src, readBuffer)
	req, _ := http.NewRequest(method, "http://up/mcp", nil)
	resp, err := read(br, req)
	if err != nil {
		return readOutcome{Refused: true}
	}
	o := readOutcome{
		Status: resp.Status, StatusCode: resp.StatusCode, Proto: resp.Proto,
		ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor, Header: resp.Header,
		ContentLength: resp.ContentLength, Close: resp.Close, NoBody: resp.Body == http.NoBody,
		TransferEncoding: resp.TransferEncoding,
	}
	body, err := io.ReadAll(resp.Body)
	o.Trailer = resp.Trailer // as a relay sees it: after the body (a chunked one's trailer)
	o.Body = string(body)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		o.BodyUnexpectedEOF = true
	} else if err != nil {
		o.BodyErr = err.Error()
	}
	var p [1]byte
	n, err := resp.Body.Read(p[:])
	o.AfterBody = string(p[:n])
	if err != nil {
		o.AfterBodyErr = err.Error()
	}
	rest, _ := io.ReadAll(br)
	o.Rest = string(rest)
	return o
}

// sameAsNetHTTP fails t when readHead and http.ReadResponse differ on data.
func sameAsNetHTTP(t *testing.T, data []byte, method string, trickle bool) {
	t.Helper()
	got := outcome(data, method, trickle, readHead)
	want := outcome(data, method, trickle, http.ReadResponse)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("on %q (%s):\nhop's reader:   %+v\nhttp.ReadResponse: %+v", data, method, got, want)
	}
	// The same into a map an earlier reply filled and Release cleared.
	spare := http.Header{"Content-Length": {"9"}, "X-Before": {"a", "b"}}
	clear(spare)
	got = outcome(data, method, trickle, func(br *bufio.Reader, req *http.Request) (*http.Response, error) {
		return readHeadInto(br, req, &spare)
	})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("on %q (%s), into a kept map:\nhop's reader:   %+v\nhttp.ReadResponse: %+v", data, method, got, want)
	}
}

// responseSeeds are heads an upstream sends, plain and not, and heads a
// lying upstream sends to smuggle a second response past a proxy.
var responseSeeds = []string{
	// plain
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nDate: Wed, 02 Dec 2026 08:00:00 GMT\r\n\r\n",
	"HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\nx-multi: a\r\nX-Multi: b\r\n\r\nno!",
	"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 599 odd \x01 reason\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length:   3  \r\nX-Empty:\r\nX-Tab:\ta\tb\t\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Length: 005\r\n\r\nabcde",
	"HTTP/1.1 200 OK\r\nX-Obs: \x80\xff\r\nContent-Length: 1\r\n\r\nx",
	// keep-alive and close
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok",
	// body shorter or longer than its length: the rest stays on the connection
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r",
	"HTTP/1.1 200 O",
	// chunked (an SSE reply): read here, the chunks by net/http's decoder
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"1c\r\nevent: message\ndata: {\"a\":1}\n\n\r\n7\r\ndata: 2\r\n2\r\n\n\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nok\r\n0;last\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0002\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 1\r\nX-Sum: 2\r\nx-other: a\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 1\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Sum 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n" + strings.Repeat("X-Long: vvvvvvvv\r\n", 400) + "\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\n0\n\n",
	// framing left to net/http
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n",
	"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nPragma: no-cache\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nTrailer: X\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 2\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 101 Switching Protocols\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 600 High\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 999999999999999999\r\n\r\nok",
	// smuggling: two lengths, length and chunked, folds, stray CR/LF, NUL, spaces
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-A: 1\r\n Content-Length: 40\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\tfolded\r\n\r\nok",
	"HTTP/1.1 200 OK\r\n Content-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\nok",
	"HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 40\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nX-A: a\r\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nX-A: a\x7fb\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length : 40\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent Length: 40\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\n: 40\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nNoColon\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: \x002\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\x00\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length\x00: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length\xff: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nConnection:\tclose \r\nContent-Length: 2\r\n\r\nok",
	// status lines
	"HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 +20 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1\t200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"http/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/0.9 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\r\nContent-Length: 2\r\n\r\nok",
	"\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"",
}

// manyFields is a head with n header fields (one past the read buffer
// when n is large).
func manyFields(n int) string {
	return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + strings.Repeat("X-F: v\r\n", n) + "\r\nok"
}

func TestReadHeadAgreesWithNetHTTP(t *testing.T) {
	seeds := append(responseSeeds, manyFields(20), manyFields(300), manyFields(2000))
	for _, s := range seeds {
		for _, method := range []string{"POST", "GET", "HEAD"} {
			sameAsNetHTTP(t, []byte(s), method, false)
			sameAsNetHTTP(t, []byte(s), method, true)
		}
	}
}

// The usual replies are parsed here, not handed to net/http's reader.
func TestUsualHeadsArePlain(t *testing.T) {
	for _, s := range []string{
		responseSeeds[0], responseSeeds[1], responseSeeds[2], responseSeeds[3],
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: abc\r\nDate: Wed, 02 Dec 2026 08:00:00 GMT\r\nContent-Length: 74\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
		manyFields(20),
		// go-sdk's SSE reply to a POST
		"HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: keep-alive\r\nContent-Type: text/event-stream\r\nDate: Wed, 02 Dec 2026 08:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		n, v := scanHead([]byte(s))
		if v != plainhead.Plain {
			t.Errorf("%q: scanHead says %d, want plain", s, v)
			continue
		}
		if plainResponse(bufio.NewReader(strings.NewReader("")), []byte(s[:n]), &http.Request{Method: "POST"}, nil) == nil {
			t.Errorf("%q: not a plain response", s)
		}
	}
}

// readAllocs counts the allocations of reading reply with read, head and
// body to its end, and checks the body is body.
func readAllocs(t *testing.T, reply []byte, body string, read func(*bufio.Reader, *http.Request) (*http.Response, error)) float64 {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://up/mcp", nil)
	src := bytes.NewReader(reply)
	br := bufio.NewReaderSize(src, readBuffer)
	p := make([]byte, 64)
	return testing.AllocsPerRun(100, func() {
		src.Reset(reply)
		br.Reset(src)
		resp, err := read(br, req)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for err == nil {
			var m int
			m, err = resp.Body.Read(p[n:])
			n += m
		}
		if err != io.EOF || string(p[:n]) != body {
			t.Fatalf("body %q, %v; want %q", p[:n], err, body)
		}
	})
}

// A plain head costs four allocations (the head as a string, the response
// with its body, the header map and its table), not net/http's reader's
// twelve: a bound that a reader always falling back would break; two
// into a map kept from an earlier reply.
func TestReadHeadAllocations(t *testing.T) {
	reply := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: abc\r\nDate: Wed, 02 Dec 2026 08:00:00 GMT\r\nContent-Length: 2\r\n\r\n{}")
	ours, theirs := readAllocs(t, reply, "{}", readHead), readAllocs(t, reply, "{}", http.ReadResponse)
	t.Logf("allocations per response head: hop %.0f, http.ReadResponse %.0f", ours, theirs)
	if ours > 4 {
		t.Errorf("%.0f allocations per plain response head, want at most 4 (http.ReadResponse: %.0f)", ours, theirs)
	}
	// Into a map kept from the reply before (Release): the head and the
	// response alone.
	var kept http.Header
	into := readAllocs(t, reply, "{}", func(br *bufio.Reader, req *http.Request) (*http.Response, error) {
		spare := kept
		resp, err := readHeadInto(br, req, &spare)
		if err == nil {
			kept = resp.Header
			clear(kept)
		}
		return resp, err
	})
	if into > 2 {
		t.Errorf("%.0f allocations per plain response head into a kept map, want at most 2", into)
	}
}

// A chunked reply (go-sdk's SSE reply to a POST) costs five allocations
// here, head and body read to the end: the head as a string, the response
// with its body, the header map and its table, and net/http's chunk
// decoder. net/http's reader takes fourteen.
func TestReadChunkedAllocations(t *testing.T) {
	reply := []byte("HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: keep-alive\r\nContent-Type: text/event-stream\r\n" +
		"Date: Wed, 02 Dec 2026 08:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n7\r\ndata: 1\r\n3\r\n\n\n\n\r\n0\r\n\r\n")
	const body = "data: 1\n\n\n"
	ours, theirs := readAllocs(t, reply, body, readHead), readAllocs(t, reply, body, http.ReadResponse)
	t.Logf("allocations per chunked reply: hop %.0f, http.ReadResponse %.0f", ours, theirs)
	if ours > 5 {
		t.Errorf("%.0f allocations per chunked reply, want at most 5 (http.ReadResponse: %.0f)", ours, theirs)
	}
}

// FuzzReadResponse holds the reader to http.ReadResponse on arbitrary
// bytes: the same verdict, response, body, and bytes left after it.
func FuzzReadResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s), false, false)
	}
	f.Add([]byte(manyFields(300)), false, true)
	f.Add([]byte(responseSeeds[0]), true, true)
	f.Fuzz(func(t *testing.T, data []byte, head, trickle bool) {
		method := "POST"
		if head {
			method = "HEAD"
		}
		sameAsNetHTTP(t, data, method, trickle)
	})
}

// TestAnswerRefuses: what the watch for an early answer makes of the bytes
// an upstream sent while the request was still going out. Expected values
// from RFC 9110 (15.2: interim replies are not the answer; 15.3: a 2xx
// accepts the request, so its sender may read on) and RFC 9112 (9.6: the
// client stops sending for an answer that refuses the body); a refusal
// stops the write whether it says the connection closes or not, as
// net/http's Transport hands either to its caller without waiting for the
// write.
func TestAnswerRefuses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"HTTP/1.1 41", answerMore},
		{"HTTP/1.1 413 Too Large\r\nConnection: close\r\n", answerMore},
		{"HTTP/1.1 100 Continue\r\n\r\n", answerMore},
		{"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n", answerMore},
		{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", answerRefuse},
		{"HTTP/1.1 413 Too Large\r\nConnection: close\r\nContent-Length: 9\r\n\r\ntoo large", answerRefuse},
		{"HTTP/1.1 401 Unauthorized\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", answerRefuse},
		{"HTTP/1.0 403 Forbidden\r\nContent-Length: 0\r\n\r\n", answerRefuse},
		{"HTTP/1.0 403 Forbidden\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", answerRefuse},
		{"HTTP/1.1 500 Internal Server Error\r\n\r\n", answerRefuse},
		{"HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n", answerRefuse},
		{"HTTP/1.1 307 Temporary Redirect\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n", answerRefuse},
		{"HTTP/1.1 100 Continue\n\nHTTP/1.1 413 Too Large\nConnection: close\n\n", answerRefuse},
		{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", answerKeep},
		{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", answerKeep},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", answerKeep},
		{"not an answer\r\n\r\n", answerKeep},
	} {
		if got := answerRefuses([]byte(tc.in)); got != tc.want {
			t.Errorf("answerRefuses(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzAnswerRefuses holds answerRefuses to net/http's reader on the same
// bytes: a final head it says refuses is one http.ReadResponse, past the
// interim replies, reads with a status of 300 or more, and one it says
// does not, read whole, has a lower status. The same bytes given to one
// answerScan in pieces of step bytes (as they come off a socket) are
// judged at each piece as all the bytes so far are at once.
func FuzzAnswerRefuses(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.0 403 Forbidden\r\n\r\n",
		"HTTP/1.1 413 Too Large\r\nConnection: close\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
	} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, step uint8) {
		got := answerRefuses(b)
		var scan answerScan
		for n := 0; n < len(b); {
			n = min(n+max(int(step), 1), len(b))
			piecewise, whole := scan.judge(b[:n]), answerRefuses(b[:n])
			if piecewise != whole {
				t.Fatalf("%q in pieces of %d: %d after %d bytes, where all of them at once are %d", b, step, piecewise, n, whole)
			}
			if piecewise != answerMore {
				break
			}
		}
		br := bufio.NewReader(bytes.NewReader(b))
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				if got == answerRefuse {
					t.Fatalf("answerRefuses(%q) = refuse where net/http's reader fails: %v", b, err)
				}
				return
			}
			if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
				continue
			}
			refuses := resp.StatusCode >= 300
			if got == answerRefuse && !refuses || got == answerKeep && refuses {
				t.Fatalf("answerRefuses(%q) = %d; net/http's reader: status %d", b, got, resp.StatusCode)
			}
			return
		}
	})
}
