package h1

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// What a connection keeps from one request to the next (the reply's
// header map) must carry nothing of one reply into the next: each reply
// has exactly the fields its handler set, on a kept-alive connection
// whether the requests come one after the other or pipelined, as under
// net/http's server, which makes a new map for every reply.

// fieldsHandler sets fields a second reply must not inherit: one added
// (a leftover would make two values), one only the first reply sets, and
// a trailer only the first reply announces.
func fieldsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("X-Path", r.URL.Path)
		if r.URL.Path == "/first" {
			h.Set("X-Only-First", "yes")
			h.Set("Trailer", "X-First-Trailer")
			io.WriteString(w, "first")
			h.Set("X-First-Trailer", "t")
			return
		}
		io.WriteString(w, "second")
	})
}

// checkSecond judges the second reply: its own fields only.
func checkSecond(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	if body != "second" {
		t.Errorf("second body %q", body)
	}
	if got := resp.Header.Values("X-Path"); len(got) != 1 || got[0] != "/second" {
		t.Errorf("second reply's X-Path %q, want just /second", got)
	}
	if got := resp.Header.Get("X-Only-First"); got != "" {
		t.Errorf("second reply carries the first's X-Only-First: %q", got)
	}
	if got := resp.Header.Get("Trailer"); got != "" {
		t.Errorf("second reply announces the first's trailer: %q", got)
	}
	if len(resp.Trailer) != 0 {
		t.Errorf("second reply has trailers %v", resp.Trailer)
	}
	if len(resp.TransferEncoding) != 0 || resp.ContentLength != int64(len("second")) {
		t.Errorf("second reply framed as %v, length %d: want a Content-Length of %d", resp.TransferEncoding, resp.ContentLength, len("second"))
	}
}

func TestReplyHeaderNotCarriedOver(t *testing.T) {
	const first = "GET /first HTTP/1.1\r\nHost: a\r\n\r\n"
	const second = "GET /second HTTP/1.1\r\nHost: a\r\n\r\n"
	for _, pipelined := range []bool{false, true} {
		name := "one after the other"
		if pipelined {
			name = "pipelined"
		}
		t.Run(name, func(t *testing.T) {
			both(t, func(t *testing.T, serve serveFunc) {
				c, br := dial(t, serve(t, fieldsHandler()))
				if pipelined {
					io.WriteString(c, first+second)
				} else {
					io.WriteString(c, first)
				}
				resp, body := readReply(t, br, "GET")
				if body != "first" || resp.Header.Get("X-Only-First") != "yes" || resp.Trailer.Get("X-First-Trailer") != "t" {
					t.Fatalf("first reply: %q, header %v, trailer %v", body, resp.Header, resp.Trailer)
				}
				if !pipelined {
					io.WriteString(c, second)
				}
				resp, body = readReply(t, br, "GET")
				checkSecond(t, resp, body)
			})
		})
	}
}

// Many replies on one connection, each with fields of its own: none sees
// another's, however many the connection has served, and one reply with
// more fields than a connection keeps room for changes nothing.
func TestReplyHeadersOfManyReplies(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for i := range len(r.URL.Path) - 1 {
				w.Header().Add("X-F"+strings.Repeat("x", i), r.URL.Path)
			}
		}))
		c, br := dial(t, addr)
		for _, n := range []int{3, 1, 40, 2, 0, 5} {
			path := "/" + strings.Repeat("p", n)
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, _ := readReply(t, br, "GET")
			got := 0
			for k, vv := range resp.Header {
				if !strings.HasPrefix(k, "X-F") {
					continue
				}
				got++
				if len(vv) != 1 || vv[0] != path {
					t.Errorf("reply to %s: %s: %q", path, k, vv)
				}
			}
			if got != n {
				t.Errorf("reply to %s: %d fields of its handler, want %d", path, got, n)
			}
		}
	})
}
