package h1fault

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Responses written from RFC 9112's grammar, each with what it must read
// as: its status and body, or an error.
var responseTable = []struct {
	name, in, method string
	status           int
	body             string
	bad              bool // a syntax or framing error
	incomplete       bool // ErrIncomplete
}{
	{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcNEXT", "GET", 200, "abc", false, false},
	{"empty reason", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", "GET", 200, "", false, false},
	{"ows around value", "HTTP/1.1 200 OK\r\nContent-Length:\t 3 \r\n\r\nabc", "GET", 200, "abc", false, false},
	{"same length twice", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3, 3\r\n\r\nabc", "GET", 200, "abc", false, false},
	{"chunked with ext and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;a=\"b c\"\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n", "GET", 200, "abc0123456789", false, false},
	{"head has no body", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", "HEAD", 200, "", false, false},
	{"204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", "GET", 204, "", false, false},
	{"304 has no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n", "GET", 304, "", false, false},
	{"100 alone", "HTTP/1.1 100 Continue\r\n\r\n", "POST", 100, "", false, false},
	{"close-delimited", "HTTP/1.0 200 OK\r\n\r\nto the end", "GET", 200, "to the end", false, false},
	{"HTTP/2 status line", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", 0, "", true, false},
	{"chunked in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "GET", 0, "", true, false},
	{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", "GET", 0, "", true, false},
	{"bare CR", "HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n", "GET", 0, "", true, false},
	{"obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", "GET", 0, "", true, false},
	{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", "GET", 0, "", true, false},
	{"nul in value", "HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 0\r\n\r\n", "GET", 0, "", true, false},
	{"no SP before reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "GET", 0, "", true, false},
	{"status below 100", "HTTP/1.1 099 X\r\nContent-Length: 0\r\n\r\n", "GET", 0, "", true, false},
	{"two-digit status", "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n", "GET", 0, "", true, false},
	{"not HTTP", "HTTX/1.1 200 OK\r\n\r\n", "GET", 0, "", true, false},
	{"differing lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "GET", 0, "", true, false},
	{"plus length", "HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc", "GET", 0, "", true, false},
	{"length and chunked", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "GET", 0, "", true, false},
	{"chunked in capitals", "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "GET", 200, "abc", false, false},
	// Tokens are ASCII (RFC 9110 5.6.2) and so is OWS (5.6.3): net/http's
	// reader refuses both of these, a Kelvin sign is no "k" and a no-break
	// space no white space.
	{"kelvin sign in chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "GET", 0, "", true, false},
	{"no-break space after length", "HTTP/1.1 200 OK\r\nContent-Length: 3\u00a0\r\n\r\nabc", "GET", 0, "", true, false},
	{"gzip only", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc", "GET", 0, "", true, false},
	{"chunk size junk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3g\r\nabc\r\n0\r\n\r\n", "GET", 0, "", true, false},
	{"chunk size 0x", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n", "GET", 0, "", true, false},
	{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff0\r\nabc\r\n0\r\n\r\n", "GET", 0, "", true, false},
	{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX\r\n0\r\n\r\n", "GET", 0, "", true, false},
	{"body cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "GET", 0, "", false, true},
	{"chunked unterminated", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npartial\r\n", "GET", 0, "", false, true},
	{"head cut", "HTTP/1.1 200 OK\r\nContent-Len", "GET", 0, "", false, true},
}

func TestReadResponse(t *testing.T) {
	for _, tc := range responseTable {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ReadResponse(bufio.NewReader(strings.NewReader(tc.in)), tc.method)
			switch {
			case tc.incomplete:
				if !errors.Is(err, ErrIncomplete) {
					t.Fatalf("err %v, want ErrIncomplete", err)
				}
			case tc.bad:
				if err == nil || errors.Is(err, ErrIncomplete) {
					t.Fatalf("err %v, want a syntax or framing error", err)
				}
			case err != nil:
				t.Fatal(err)
			case r.Status != tc.status || string(r.Body) != tc.body:
				t.Fatalf("read %d %q, want %d %q", r.Status, r.Body, tc.status, tc.body)
			}
		})
	}
}

// TestReadResponseLeavesTheNext: a framed body ends where its framing
// says, so a pipelined second response reads whole after it.
func TestReadResponseLeavesTheNext(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n" +
		"HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nf"))
	var got []string
	for {
		r, err := ReadResponse(br, "GET")
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Reason+":"+string(r.Body))
	}
	if strings.Join(got, ",") != "OK:abc,OK:de,Not Found:f" {
		t.Fatalf("read %q", got)
	}
}

// FuzzReadResponse: the reader never panics; a body it frames by length
// is that long; and where both it and net/http's client reader take the
// bytes, they agree on the status and the body.
func FuzzReadResponse(f *testing.F) {
	for _, tc := range responseTable {
		f.Add([]byte(tc.in), tc.method == "HEAD")
	}
	f.Fuzz(func(t *testing.T, in []byte, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		r, err := ReadResponse(bufio.NewReader(bytes.NewReader(in)), method)
		if err != nil {
			return
		}
		if cl := r.Get("Content-Length"); len(cl) > 0 && !r.Chunked && method != "HEAD" && r.Status >= 200 && r.Status != 204 && r.Status != 304 {
			if n, _ := contentLength(cl); n != len(r.Body) {
				t.Fatalf("content-length %v, body %d bytes", cl, len(r.Body))
			}
		}
		if r.Status < 200 {
			return // net/http's reader skips interim responses
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(in)), &http.Request{Method: method})
		if err != nil {
			return
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return
		}
		if resp.StatusCode != r.Status || !bytes.Equal(body, r.Body) {
			t.Fatalf("net/http read %d %q, the judge %d %q", resp.StatusCode, body, r.Status, r.Body)
		}
	})
}
