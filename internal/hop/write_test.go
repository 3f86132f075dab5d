package hop

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// The request writer replaces net/http's for plain requests; these tests
// hold it to what net/http's did: the same request on the wire (as a
// server parses it), the same treatment of what is not plain, a body that
// must match its length, and large bodies still streamed.

// newReq builds a request to the upstream the way the proxy does: a URL,
// headers, and a body in memory (nil: none).
func newReq(method, target string, h http.Header, body []byte) *http.Request {
	u, _ := url.Parse(target)
	req := &http.Request{Method: method, URL: u, Header: h, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	return req
}

// parsed is what a server reads from a request's bytes.
type parsed struct {
	Method, URI, Host string
	Header            http.Header
	ContentLength     int64
	Close             bool
	Body              string
}

func parse(t testing.TB, wire []byte) (parsed, error) {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(wire)))
	if err != nil {
		return parsed{}, err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return parsed{}, err
	}
	return parsed{r.Method, r.RequestURI, r.Host, r.Header, r.ContentLength, r.Close, string(body)}, nil
}

// netHTTPBytes is what net/http's writer sends for req.
func netHTTPBytes(t testing.TB, req *http.Request) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		t.Fatalf("net/http's writer: %v", err)
	}
	return buf.Bytes()
}

func plainCases() map[string]func() *http.Request {
	json := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	return map[string]func() *http.Request{
		"post with body": func() *http.Request {
			return newReq("POST", "http://127.0.0.1:8080/mcp", http.Header{
				"Content-Type":         {"application/json"},
				"Accept":               {"application/json, text/event-stream"},
				"Mcp-Protocol-Version": {"2026-07-28"},
				"X-Forwarded-For":      {"10.0.0.1", "127.0.0.1"},
				"Authorization":        {"Bearer t0ken"},
			}, json)
		},
		"get without body": func() *http.Request {
			return newReq("GET", "http://up/mcp?x=1&y=%20", http.Header{"Accept": {"text/event-stream"}}, nil)
		},
		"delete": func() *http.Request {
			return newReq("DELETE", "http://up/mcp", http.Header{"Mcp-Session-Id": {"abc"}}, nil)
		},
		"post without body": func() *http.Request { return newReq("POST", "http://up/mcp", http.Header{}, nil) },
		"head":              func() *http.Request { return newReq("HEAD", "http://up/", nil, nil) },
		"empty method":      func() *http.Request { return newReq("", "http://up/", nil, nil) },
		"close": func() *http.Request {
			r := newReq("POST", "http://up/mcp", http.Header{}, json)
			r.Close = true
			return r
		},
		"close already said": func() *http.Request {
			r := newReq("POST", "http://up/mcp", http.Header{"Connection": {"keep-alive, Close"}}, json)
			r.Close = true
			return r
		},
		"own user agent":   func() *http.Request { return newReq("GET", "http://up/", http.Header{"User-Agent": {"agent/1"}}, nil) },
		"empty user agent": func() *http.Request { return newReq("GET", "http://up/", http.Header{"User-Agent": {""}}, nil) },
		"host field wins": func() *http.Request {
			r := newReq("GET", "http://up/", http.Header{"Host": {"ignored"}}, nil)
			r.Host = "other:81"
			return r
		},
		"length in header ignored": func() *http.Request {
			return newReq("POST", "http://up/", http.Header{"Content-Length": {"999"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}}, json)
		},
		"empty values": func() *http.Request {
			return newReq("GET", "http://up/", http.Header{"X-Empty": {""}, "X-None": {}}, nil)
		},
		"largest inline":     func() *http.Request { return newReq("POST", "http://up/", nil, bytes.Repeat([]byte("a"), maxInline)) },
		"tab inside a value": func() *http.Request { return newReq("GET", "http://up/", http.Header{"X-Tab": {"a\tb"}}, nil) },
	}
}

// A plain request reads, on the server's side, exactly as net/http's
// writer's bytes read.
func TestInlineRequestReadsAsNetHTTPsDoes(t *testing.T) {
	for name, mk := range plainCases() {
		t.Run(name, func(t *testing.T) {
			b, err := appendInline(nil, mk())
			if err != nil {
				t.Fatalf("not written inline: %v", err)
			}
			got, err := parse(t, b)
			if err != nil {
				t.Fatalf("the server cannot read it: %v\n%s", err, b)
			}
			want, err := parse(t, netHTTPBytes(t, mk()))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("server reads\n%+v\nwant (net/http's writer)\n%+v", got, want)
			}
		})
	}
}

// What net/http's writer would alter, drop or refuse is left to it, byte
// for byte: no header line a client's value could smuggle in, no field
// dropped or trimmed differently.
func TestUnplainRequestsGoThroughNetHTTP(t *testing.T) {
	json := []byte(`{"jsonrpc":"2.0","id":1}`)
	cases := map[string]func() *http.Request{
		"line break in a value": func() *http.Request {
			return newReq("POST", "http://up/mcp", http.Header{"X-A": {"v\r\nX-Injected: 1"}}, json)
		},
		"bare LF in a value": func() *http.Request {
			return newReq("GET", "http://up/", http.Header{"X-A": {"v\nX-Injected: 1"}}, nil)
		},
		"line break in the agent": func() *http.Request {
			return newReq("GET", "http://up/", http.Header{"User-Agent": {"a\r\nX-Injected: 1"}}, nil)
		},
		"space around a value": func() *http.Request { return newReq("GET", "http://up/", http.Header{"X-A": {" v "}}, nil) },
		"name not a token":     func() *http.Request { return newReq("GET", "http://up/", http.Header{"X A": {"v"}}, nil) },
		"name with a colon":    func() *http.Request { return newReq("GET", "http://up/", http.Header{"X-A:": {"v"}}, nil) },
		"host with a zone": func() *http.Request {
			r := newReq("GET", "http://up/", nil, nil)
			r.Host = "[fe80::1%25eth0]:80"
			return r
		},
		"host not ascii": func() *http.Request {
			r := newReq("GET", "http://up/", nil, nil)
			r.Host = "bücher.example"
			return r
		},
		"host with a line break": func() *http.Request {
			r := newReq("GET", "http://up/", nil, nil)
			r.Host = "up\r\nX-Injected: 1"
			return r
		},
		"trailer": func() *http.Request {
			r := newReq("POST", "http://up/", nil, json)
			r.Trailer = http.Header{"X-T": nil}
			r.ContentLength = -1
			return r
		},
		"unknown length": func() *http.Request {
			r := newReq("POST", "http://up/", nil, json)
			r.ContentLength = -1
			return r
		},
		"chunked": func() *http.Request {
			r := newReq("POST", "http://up/", nil, json)
			r.TransferEncoding = []string{"chunked"}
			r.ContentLength = -1
			return r
		},
		"past the inline bound": func() *http.Request { return newReq("POST", "http://up/", nil, bytes.Repeat([]byte("a"), maxInline+1)) },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := appendInline(nil, mk()); err != errNotInline {
				t.Fatalf("appendInline: %v, want errNotInline", err)
			}
			var got bytes.Buffer
			if _, _, _, err := writeRequest(&got, mk(), nil); err != nil {
				t.Fatal(err)
			}
			if want := netHTTPBytes(t, mk()); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("wrote\n%q\nwant net/http's\n%q", got.Bytes(), want)
			}
			if bytes.Contains(got.Bytes(), []byte("\r\nX-Injected")) {
				t.Errorf("a value smuggled in a header line:\n%q", got.Bytes())
			}
		})
	}
}

// writeCounter counts the writes made to it.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// A plain request leaves as one write, head and body together, however its
// body is wrapped; a body past the bound is streamed, not gathered, and
// arrives whole.
func TestPlainRequestIsOneWrite(t *testing.T) {
	for _, size := range []int{0, 1, 4 << 10, maxInline, maxInline + 1, 4 * maxInline} {
		body := bytes.Repeat([]byte("b"), size)
		req := newReq("POST", "http://up/mcp", http.Header{"Content-Type": {"application/json"}}, nil)
		if size > 0 {
			// A body net/http cannot tell is in memory: it would flush the
			// head on its own first.
			req.Body = io.NopCloser(iotest.HalfReader(bytes.NewReader(body)))
			req.ContentLength = int64(size)
		}
		var w writeCounter
		n, _, _, err := writeRequest(&w, req, nil)
		if err != nil || n != int64(w.Len()) {
			t.Fatalf("size %d: wrote %d (%d buffered), %v", size, n, w.Len(), err)
		}
		switch {
		case size <= maxInline && w.writes != 1:
			t.Errorf("size %d: %d writes, want 1", size, w.writes)
		case size > maxInline && w.writes < 2:
			t.Errorf("size %d past the bound: %d write, want it streamed in pieces", size, w.writes)
		}
		got, err := parse(t, w.Bytes())
		if err != nil || got.Body != string(body) {
			t.Errorf("size %d: the server reads %d bytes of body, %v", size, len(got.Body), err)
		}
	}
}

// closeCounter is a body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// A body that does not hold ContentLength bytes is an error before a byte
// goes out (net/http's writer sent the head first), and the body is closed
// either way, as net/http's writer closes it.
func TestBodyMustMatchItsLength(t *testing.T) {
	for name, c := range map[string]struct {
		body   string
		length int64
	}{
		"shorter": {"abc", 5},
		"longer":  {"abcdef", 5},
		"exact":   {"abcde", 5},
	} {
		t.Run(name, func(t *testing.T) {
			body := &closeCounter{Reader: strings.NewReader(c.body)}
			req := newReq("POST", "http://up/", nil, nil)
			req.Body, req.ContentLength = body, c.length
			var w writeCounter
			_, _, _, err := writeRequest(&w, req, nil)
			if body.closed != 1 {
				t.Errorf("body closed %d times, want once", body.closed)
			}
			if name == "exact" {
				if err != nil || w.writes != 1 {
					t.Errorf("exact length: %v after %d writes", err, w.writes)
				}
				return
			}
			if !errors.Is(err, errBodyLength) || w.writes != 0 {
				t.Errorf("%s body: %v after %d writes; want errBodyLength, nothing written", name, err, w.writes)
			}
		})
	}
}

// A request whose body does not match its length fails once, on its
// pooled connection: it is not sent again on a new one.
func TestBodyLengthErrorIsNotRetried(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	tr := newTransport(t)
	do(t, tr, post(t, srv.URL, "warm"))
	req := post(t, srv.URL, "abc")
	req.ContentLength = 5
	if _, err := tr.RoundTrip(req); !errors.Is(err, errBodyLength) {
		t.Fatalf("RoundTrip: %v, want errBodyLength", err)
	}
	if n := tr.dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1: the request was retried on a fresh connection", n)
	}
}

// A body longer than its ContentLength is refused before anything is
// written, as net/http's writer refuses it, and so is a shorter one.
func TestInlineBodyLength(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	for _, c := range []struct {
		body string
		n    int64
	}{{"abc", 2}, {"abc", 4}} {
		req := &http.Request{Method: "POST", URL: u, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(c.body)), ContentLength: c.n}
		var out bytes.Buffer
		if _, _, _, err := writeRequest(&out, req, nil); !errors.Is(err, errBodyLength) {
			t.Errorf("body %q, ContentLength %d: %v, want errBodyLength", c.body, c.n, err)
		}
		if out.Len() != 0 {
			t.Errorf("body %q, ContentLength %d: %q written", c.body, c.n, out.String())
		}
	}
}

// A plain request costs the writer no allocation: its buffer comes from a
// pool, and the byte that checks the body's end is read into that buffer
// (a variable of its own escaped through the Read). net/http's writer
// costs about ten. The race detector adds its own (raceAllocs).
func TestInlineWriteAllocations(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	rd := bytes.NewReader(body)
	req := &http.Request{Method: "POST", URL: u, Header: h, Body: io.NopCloser(rd), ContentLength: int64(len(body))}
	allocs := testing.AllocsPerRun(100, func() {
		rd.Reset(body)
		if _, _, _, err := writeRequest(io.Discard, req, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > raceAllocs {
		t.Errorf("%.0f allocations per request written, want at most %d", allocs, raceAllocs)
	}
}

// The writer's choice against net/http's on arbitrary fields: whatever it
// writes inline reads, on the server's side, as net/http's bytes do.
func FuzzWriteRequest(f *testing.F) {
	f.Add("POST", "/mcp", "X-A", "v", "ua", "up:80", []byte(`{"a":1}`))
	f.Add("GET", "/?q=1", "X-A", "v\r\nX-B: 1", "", "up", []byte(nil))
	f.Add("DELETE", "/", "X A", " v", "a\nb", "[::1%1]", []byte("x"))
	f.Fuzz(func(t *testing.T, method, path, name, value, ua, host string, body []byte) {
		mk := func() *http.Request {
			u := &url.URL{Scheme: "http", Host: "up", Path: path}
			req := newReq(method, u.String(), http.Header{name: {value}, "User-Agent": {ua}}, nil)
			if req.URL == nil {
				return nil
			}
			req.Host = host
			if len(body) > 0 {
				req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			return req
		}
		if mk() == nil {
			return
		}
		var want bytes.Buffer
		if err := mk().Write(&want); err != nil {
			return // net/http's writer refuses it too
		}
		b, err := appendInline(nil, mk())
		if err == errNotInline {
			return // written by net/http's writer itself
		}
		if err != nil {
			t.Fatalf("appendInline: %v", err)
		}
		wantReq, werr := parse(t, want.Bytes())
		got, gerr := parse(t, b)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, wantReq) {
			t.Fatalf("inline\n%q (%v)\nreads as\n%+v\nnet/http's\n%q (%v)\nreads as\n%+v", b, gerr, got, want.Bytes(), werr, wantReq)
		}
	})
}

// A request to be closed says so unless its Connection field holds the
// token "close" already: the token in ASCII, as net/http's writer looks
// for it (RFC 9110 5.6.2). A long s or a Kelvin sign in the field is no
// "close", and the server must still read the request as the last.
func TestWriteCloseToken(t *testing.T) {
	for _, conn := range []string{"close", "Close", "CLOSE", "x, close", "x,\tclose", "clo\u017fe", "\u212aeep-alive", "keep-alive"} {
		mk := func() *http.Request {
			req := newReq("GET", "http://up/mcp", http.Header{"Connection": {conn}}, nil)
			req.Close = true
			return req
		}
		var want bytes.Buffer
		if err := mk().Write(&want); err != nil {
			t.Fatal(err)
		}
		b, err := appendInline(nil, mk())
		if err != nil {
			t.Fatalf("Connection %q: appendInline: %v", conn, err)
		}
		wantReq, werr := parse(t, want.Bytes())
		got, gerr := parse(t, b)
		if werr != nil || gerr != nil || !reflect.DeepEqual(got, wantReq) {
			t.Errorf("Connection %q: inline\n%q (%v)\nreads as\n%+v\nnet/http's\n%q (%v)\nreads as\n%+v", conn, b, gerr, got, want.Bytes(), werr, wantReq)
		}
		if !got.Close {
			t.Errorf("Connection %q: inline request not read as the last", conn)
		}
	}
}
