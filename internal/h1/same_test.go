package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// These tests send the same bytes to this server and to net/http's, each
// serving the same handler, and want the same replies: the transparency
// tests of the proxy compare the sidecar to a direct upstream, so the
// server must frame what the proxy writes as net/http's does.

// netHTTP serves h with net/http's server on loopback until the test ends.
func netHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 8 << 10, ErrorLog: discardLog()}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

// reply is what a client makes of one reply.
type reply struct {
	Status        string
	Proto         string
	Header        http.Header
	Body          string
	BodyErr       string
	Trailer       http.Header
	ContentLength int64
	Chunked       bool
	Close         bool
}

// replies sends raw on a new connection to addr and reads replies, one per
// method, until one fails; then whether the server closed the connection.
func replies(t *testing.T, addr, raw string, methods []string) ([]reply, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []reply
	for _, m := range methods {
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			return out, "read error: " + err.Error()
		}
		body, err := io.ReadAll(resp.Body)
		r := reply{Status: resp.Status, Proto: resp.Proto, Header: resp.Header, Body: string(body), Trailer: resp.Trailer,
			ContentLength: resp.ContentLength, Chunked: len(resp.TransferEncoding) > 0, Close: resp.Close}
		if err != nil {
			r.BodyErr = err.Error()
		}
		delete(r.Header, "Date")
		out = append(out, r)
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = br.ReadByte()
	switch {
	case err == nil:
		return out, "more bytes"
	case errors.Is(err, io.EOF):
		return out, "closed"
	case errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "reset"):
		return out, "closed"
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return out, "open"
		}
		return out, err.Error()
	}
}

type sameCase struct {
	name    string
	raw     string
	methods []string
	h       http.HandlerFunc
}

func write(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, s) }
}

var sameCases = []sameCase{
	{"plain", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, write("hello")},
	{"json", "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}", []string{"POST"}, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}},
	{"sniff html", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, write("<html><body>x</body></html>")},
	{"empty", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {}},
	{"status only", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(418) }},
	{"unknown status", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }},
	{"204", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.WriteHeader(204)
		w.Write([]byte("hello"))
	}},
	{"304", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Etag", `"x"`)
		w.WriteHeader(304)
	}},
	{"head", "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"HEAD"}, write("hello")},
	{"head empty", "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"HEAD"}, func(w http.ResponseWriter, r *http.Request) {}},
	{"handler length", "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET", "GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	}},
	{"handler length short", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "hello")
	}},
	{"handler length over", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		if _, err := io.WriteString(w, "hello"); !errors.Is(err, http.ErrContentLength) {
			panic(fmt.Sprintf("write over the length: %v", err))
		}
	}},
	{"handler length invalid", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "x")
		io.WriteString(w, "hello")
	}},
	{"flush", "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET", "GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: 2\n\n")
	}},
	{"flush first", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		io.WriteString(w, "late")
	}},
	{"big", "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET", "GET"}, write(strings.Repeat("0123456789abcdef", 10<<10))},
	{"trailers", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum, Content-Length")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "body")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "7")
	}},
	{"trailer unannounced, after a flush", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set(http.TrailerPrefix+"X-Late", "7")
	}},
	{"trailer unannounced, no flush", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "body")
		w.Header().Set(http.TrailerPrefix+"X-Late", "7")
	}},
	{"header after WriteHeader", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Before", "1")
		w.WriteHeader(200)
		w.Header().Set("X-After", "1")
		io.WriteString(w, "x")
	}},
	{"newline in value", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Bad"] = []string{"a\r\nInjected: 1"}
		w.Header()["Bad Name"] = []string{"v"}
		io.WriteString(w, "x")
	}},
	{"identity te", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "identity")
		w.(http.Flusher).Flush()
		io.WriteString(w, "x")
	}},
	{"te and length", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Header().Set("Content-Length", "1")
		io.WriteString(w, "x")
	}},
	{"connection close asked", "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", []string{"GET"}, write("x")},
	{"connection close set", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "x")
	}},
	{"http/1.0", "GET / HTTP/1.0\r\n\r\n", []string{"GET"}, write("x")},
	{"http/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", []string{"GET", "GET"}, write("x")},
	{"http/1.0 stream", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a")
		w.(http.Flusher).Flush()
		io.WriteString(w, "b")
	}},
	{"expect other", "POST / HTTP/1.1\r\nHost: a\r\nExpect: something\r\nContent-Length: 1\r\n\r\nx", []string{"POST"}, write("never")},
	{"unread small body", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, write("x")},
	{"unread chunked body", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, write("x")},
	{"body closed unread", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, closeBody},
	{"body closed part read", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, func(w http.ResponseWriter, r *http.Request) {
		var b [2]byte
		io.ReadFull(r.Body, b[:])
		closeBody(w, r)
	}},
	{"chunked body closed unread", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, closeBody},
	{"bad chunked body closed", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, closeBody},
	{"body closed, connection close", "POST / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello", []string{"POST"}, closeBody},
	{"body closed, head for net/http's reader", "POST / HTTP/1.1\nHost: a\nContent-Length: 5\n\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, closeBody},
	{"chunked body", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", []string{"POST"}, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %v %v %v", b, err, r.Trailer, r.ContentLength)
	}},
	{"pipelined", "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET", "GET", "GET"}, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path)
	}},
	{"request view", "POST /p?q=1 HTTP/1.1\r\nHost: h:1\r\nx-lower: v\r\nContent-Length: 1\r\n\r\nz", []string{"POST"}, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %q %s %d.%d %v %d %v %q %v", r.Method, r.URL, r.RequestURI, r.Proto, r.ProtoMajor, r.ProtoMinor, r.Header, r.ContentLength, r.Close, r.Host, r.TransferEncoding)
	}},
	{"options star", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", []string{"OPTIONS"}, write("never")},
	{"1xx", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</s.css>; rel=preload")
		w.WriteHeader(103)
		io.WriteString(w, "x")
	}},
	{"bad request line", "GET / HTTP/1.1 x\r\nHost: a\r\n\r\n", []string{"GET"}, write("never")},
	{"no host", "GET / HTTP/1.1\r\n\r\n", []string{"GET"}, write("never")},
	{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", []string{"GET"}, write("never")},
	{"bad host", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", []string{"GET"}, write("never")},
	{"space before colon", "GET / HTTP/1.1\r\nHost: a\r\nX : 1\r\n\r\n", []string{"GET"}, write("never")},
	{"nul in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", []string{"GET"}, write("never")},
	{"ctl in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x0bb\r\n\r\n", []string{"GET"}, write("never")},
	{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n", []string{"GET"}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Header.Get("X")) }},
	{"two lengths", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", []string{"POST"}, write("never")},
	{"same two lengths", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", []string{"POST"}, write("ok")},
	{"bad length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x1\r\n\r\nx", []string{"POST"}, write("never")},
	{"gzip te", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", []string{"POST"}, write("never")},
	{"chunked not last", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", []string{"POST"}, write("never")},
	{"http/2", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", []string{"GET"}, write("never")},
	{"http/0.9 version", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", []string{"GET"}, write("never")},
	{"bare lf", "GET / HTTP/1.1\nHost: a\n\n", []string{"GET"}, write("lf")},
	{"crlf after post", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []string{"POST", "GET"}, write("ok")},
}

// closeBody closes the request body, reads it after, and answers what
// that read said: as a handler that refuses a request does, with a defer.
func closeBody(w http.ResponseWriter, r *http.Request) {
	r.Body.Close()
	_, err := r.Body.Read(make([]byte, 1))
	fmt.Fprint(w, err)
}

func TestSameRepliesAsNetHTTP(t *testing.T) {
	for _, c := range sameCases {
		t.Run(c.name, func(t *testing.T) {
			_, ours, _ := start(t, c.h)
			theirs := netHTTP(t, c.h)
			got, gotEnd := replies(t, ours, c.raw, c.methods)
			want, wantEnd := replies(t, theirs, c.raw, c.methods)
			if !reflect.DeepEqual(got, want) || gotEnd != wantEnd {
				t.Errorf("ours:\n %+v then %s\nnet/http's:\n %+v then %s", got, gotEnd, want, wantEnd)
			}
		})
	}
}
