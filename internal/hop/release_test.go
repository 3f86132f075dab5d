package hop

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// replyServer answers every request on a connection with the reply its
// target names: /a and /b carry fields of their own (RFC 9112 framing by
// Content-Length), /chunked a chunked body whose coding is spelled
// "Chunked", which this package hands to net/http's reader.
func replyServer(t *testing.T) string {
	replies := map[string]string{
		"/a":       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Only-A: 1\r\nX-Both: a1\r\nX-Both: a2\r\nContent-Length: 2\r\n\r\n{}",
		"/b":       "HTTP/1.1 201 Created\r\nX-Both: b\r\nContent-Length: 1\r\n\r\nb",
		"/chunked": "HTTP/1.1 200 OK\r\nX-Chunked: 1\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nc\r\n0\r\n\r\n",
	}
	return rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, replies[req.URL.Path])
		}
	})
}

// The header of /b's reply as RFC 9112 reads it: what a reply to /b must
// carry, whichever map it came in.
var headerB = http.Header{"X-Both": {"b"}, "Content-Length": {"1"}}

func mapOf(h http.Header) uintptr { return reflect.ValueOf(h).Pointer() }

// TestReleaseGivesTheMapToALaterReply: a reply's header map given back
// serves a later reply, which carries its own fields and none of the
// earlier's; the released response no longer has it.
func TestReleaseGivesTheMapToALaterReply(t *testing.T) {
	url := replyServer(t)
	tr := newTransport(t)
	reused := false
	// sync.Pool may drop what it is given (always possible, and one time
	// in four under the race detector): tried until a map comes back.
	for i := 0; i < 50 && !reused; i++ {
		a, body := do(t, tr, get(t, url+"/a"))
		if body != "{}" || a.Header.Get("X-Only-A") != "1" || len(a.Header.Values("X-Both")) != 2 {
			t.Fatalf("reply to /a: %v %q", a.Header, body)
		}
		kept := mapOf(a.Header)
		Release(a)
		if a.Header != nil {
			t.Fatal("a released response still has its header")
		}
		b, body := do(t, tr, get(t, url+"/b"))
		if body != "b" || b.StatusCode != 201 || !reflect.DeepEqual(b.Header, headerB) {
			t.Fatalf("reply to /b after /a's map was released: %d %v %q, want 201 %v", b.StatusCode, b.Header, body, headerB)
		}
		reused = mapOf(b.Header) == kept
		Release(b)
	}
	if !reused {
		t.Fatal("no released map was used again in 50 tries")
	}
}

// TestReleaseLeavesOtherResponsesAlone: Release does nothing to a response
// whose body is still open, to a copy of a response, to a reply net/http's
// reader read, to a reply without a body, or a second time; none of their
// maps reaches a later reply.
func TestReleaseLeavesOtherResponsesAlone(t *testing.T) {
	url := replyServer(t)
	tr := newTransport(t)
	check := func(name string, resp *http.Response, want http.Header) {
		t.Helper()
		before := mapOf(resp.Header)
		Release(resp)
		if resp.Header == nil || mapOf(resp.Header) != before || !reflect.DeepEqual(resp.Header, want) {
			t.Errorf("%s: header after Release %v, want %v as it was", name, resp.Header, want)
		}
	}
	wantA := http.Header{"Content-Type": {"application/json"}, "X-Only-A": {"1"}, "X-Both": {"a1", "a2"}, "Content-Length": {"2"}}

	open, err := tr.RoundTrip(get(t, url+"/a"))
	if err != nil {
		t.Fatal(err)
	}
	check("body still open", open, wantA)
	open.Body.Close()

	orig, _ := do(t, tr, get(t, url+"/a"))
	dup := *orig
	check("a copy", &dup, wantA)
	Release(orig)
	orig.Header = http.Header{"X-Set-After": {"1"}} // the caller's own map now
	check("released already", orig, http.Header{"X-Set-After": {"1"}})

	chunked, body := do(t, tr, get(t, url+"/chunked"))
	if body != "c" {
		t.Fatalf("chunked body %q", body)
	}
	check("read by net/http", chunked, http.Header{"X-Chunked": {"1"}})

	for range 8 { // the maps left alone above are not handed out
		b, _ := do(t, tr, get(t, url+"/b"))
		for _, m := range []http.Header{open.Header, dup.Header, chunked.Header, orig.Header} {
			if mapOf(b.Header) == mapOf(m) {
				t.Fatal("a later reply came in a map Release was to leave alone")
			}
		}
		if !reflect.DeepEqual(b.Header, headerB) {
			t.Fatalf("reply to /b: %v, want %v", b.Header, headerB)
		}
	}
}

// A reply whose many fields grew its map past what is kept: released, its
// map is not handed out again.
func TestReleaseLetsALargeMapGo(t *testing.T) {
	var head strings.Builder
	head.WriteString("HTTP/1.1 200 OK\r\n")
	for i := range maxReleased + 1 {
		head.WriteString("X-F" + strings.Repeat("x", i) + ": v\r\n")
	}
	head.WriteString("Content-Length: 0\r\n\r\n")
	large := head.String()
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/large" {
				io.WriteString(c, strings.Replace(large, "Content-Length: 0", "Content-Length: 1", 1)+"x")
			} else {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Small: 1\r\nContent-Length: 1\r\n\r\ns")
			}
		}
	})
	tr := newTransport(t)
	for range 8 {
		l, _ := do(t, tr, get(t, url+"/large"))
		if len(l.Header) != maxReleased+2 {
			t.Fatalf("large reply has %d fields", len(l.Header))
		}
		kept := mapOf(l.Header)
		Release(l)
		s, _ := do(t, tr, get(t, url+"/small"))
		if mapOf(s.Header) == kept {
			t.Fatal("a map past maxReleased fields was handed out again")
		}
		if !reflect.DeepEqual(s.Header, http.Header{"X-Small": {"1"}, "Content-Length": {"1"}}) {
			t.Fatalf("small reply: %v", s.Header)
		}
	}
}
