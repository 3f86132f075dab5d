package hop

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRetryRewindsABodyInMemory: a request whose body is in memory and
// which has no GetBody is sent again, whole, when it may be (nothing
// written, or replayable and nothing read back) on a kept-alive
// connection the upstream hung up; one whose body is not in memory and
// has no GetBody is not.
func TestRetryRewindsABodyInMemory(t *testing.T) {
	for _, inMem := range []bool{true, false} {
		t.Run(fmt.Sprintf("in memory %v", inMem), func(t *testing.T) {
			var conns atomic.Int64
			bodies := make(chan string, 4)
			url := rawServer(t, func(i int, c net.Conn, br *bufio.Reader) {
				conns.Add(1)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					if i == 0 && n == 1 {
						return // hang up on the second request of the first connection
					}
					bodies <- string(b)
					io.WriteString(c, okReply)
				}
			})
			tr := newTransport(t)
			newReq := func(body string) *http.Request {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err != nil {
					t.Fatal(err)
				}
				if inMem {
					req.Body = NewMemBody([]byte(body))
				} else {
					req.Body = io.NopCloser(strings.NewReader(body))
				}
				req.ContentLength = int64(len(body))
				return req
			}
			do(t, tr, newReq("first"))
			if b := <-bodies; b != "first" {
				t.Fatalf("first body %q", b)
			}
			resp, err := tr.RoundTrip(newReq("second body"))
			if !inMem {
				if err == nil {
					resp.Body.Close()
					t.Fatal("a body that cannot be rewound was sent again")
				}
				return
			}
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			resp.Body.Close()
			if n := conns.Load(); n != 2 {
				t.Fatalf("upstream saw %d connections, want 2", n)
			}
			if b := <-bodies; b != "second body" {
				t.Fatalf("the retry carried %q, want the whole body", b)
			}
		})
	}
}
