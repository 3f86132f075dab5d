//go:build unix

package hop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// duplexSize is each way's share of a full-duplex exchange: well past
// what loopback's socket buffers hold (the receive buffer may grow to
// 32 MiB here), so that a side that only writes is stopped by the other.
const duplexSize = 64 << 20

// duplexUpstream is a net/http server whose handler answers 200 at once
// and streams its reply while it reads the request (full duplex, as
// http.ResponseController allows): /first writes duplexSize bytes of
// reply before it reads any of the request, then the digest of what it
// read; /echo writes back each piece of the request as it reads it.
func duplexUpstream(t *testing.T) *countingServer {
	return newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Errorf("EnableFullDuplex: %v", err)
			return
		}
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		switch r.URL.Path {
		case "/first":
			if _, err := w.Write(bytes.Repeat([]byte("r"), duplexSize)); err != nil {
				return
			}
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			if err != nil {
				return
			}
			fmt.Fprintf(w, "read %d %x", n, h.Sum(nil))
		case "/echo":
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Body.Read(buf)
				if n > 0 {
					if _, werr := w.Write(buf[:n]); werr != nil {
						return
					}
					rc.Flush()
				}
				if err != nil {
					return
				}
			}
		}
	}))
}

// duplexBody is the request body of a full-duplex exchange: bytes that
// tell their order apart.
func duplexBody() []byte {
	b := make([]byte, duplexSize)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// TestEarlyOKWhileTheRequestIsWritten: an upstream that answers 200
// before it has read a large request and streams its reply while it reads
// on (a full-duplex handler, which net/http's server allows) gets the
// whole request and the caller the whole reply, as with net/http's
// Transport, which writes a request on a goroutine of its own while the
// reply is read: the write does not wait for the upstream to read while
// the upstream waits for its reply to be read. RFC 9110 (6.4) lets a
// server answer before the request is complete, and RFC 9112 (9.6) has
// the client go on sending a body unless the answer refuses it. The
// connection, whose request went out whole and whose reply was read
// whole, is reused; nothing of a round trip runs on after it.
func TestEarlyOKWhileTheRequestIsWritten(t *testing.T) {
	srv := duplexUpstream(t)
	body := duplexBody()
	sum := sha256.Sum256(body)
	want := map[string]string{
		"/first": hex.EncodeToString(digest(append(bytes.Repeat([]byte("r"), duplexSize),
			fmt.Sprintf("read %d %x", duplexSize, sum)...))),
		"/echo": hex.EncodeToString(sum[:]),
	}
	tr := newTransport(t)
	// The write's end is waited for as long as it takes: the verdict on
	// reuse counts connections, whatever the machine's speed.
	tr.restWait = hangGuard
	for _, rt := range []struct {
		name string
		rt   http.RoundTripper
	}{{"net/http", &http.Transport{}}, {"hop", tr}} {
		for _, path := range []string{"/first", "/echo"} {
			t.Run(rt.name+path, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader(body))
				resp, err := rt.rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				h := sha256.New()
				n, err := io.Copy(h, resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("reading the reply after %d bytes: %v", n, err)
				}
				if got := hex.EncodeToString(h.Sum(nil)); resp.StatusCode != http.StatusOK || got != want[path] {
					t.Fatalf("got %d and %d bytes (digest %s), want 200 and the reply to the whole request", resp.StatusCode, n, got)
				}
			})
		}
	}
	if got := tr.dials.Load(); got != 1 {
		t.Errorf("two full-duplex exchanges, each written and read whole, took %d connections, want 1", got)
	}
	waitFor(t, "the round trips' goroutines to end", func() bool { return hopGoroutines() == 0 })
}

// TestEarlyOKThenTheUpstreamStopsReading: an upstream that answers 200
// whole (with a body, or none) as soon as it has the request head, then
// neither reads the rest of a large body nor closes, gets its reply to the
// caller at once, as from net/http's Transport; the connection, its
// request not written whole, is not reused, and the write behind the
// reply ends when the caller is done with it.
func TestEarlyOKThenTheUpstreamStopsReading(t *testing.T) {
	replies := map[string]string{
		"/body":  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/empty": "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	}
	release := make(chan struct{})
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, replies[req.URL.Path])
		<-release // reads nothing more, and stays
	})
	t.Cleanup(func() { close(release) }) // before rawServer's cleanup waits for it
	body := duplexBody()
	for _, rt := range []struct {
		name string
		rt   http.RoundTripper
	}{{"net/http", &http.Transport{}}, {"hop", newTransport(t)}} {
		for path, reply := range replies {
			t.Run(rt.name+path, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(body))
				resp, err := rt.rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip: %v; want the upstream's 200", err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if _, want, _ := strings.Cut(reply, "\r\n\r\n"); err != nil || resp.StatusCode != http.StatusOK || string(got) != want {
					t.Fatalf("got %d %q, %v; want the upstream's 200 %q", resp.StatusCode, got, err, want)
				}
				if tr, ok := rt.rt.(*Transport); ok {
					if tr.Idle() != 0 {
						t.Errorf("the connection whose request was not written whole was pooled")
					}
					waitFor(t, "the round trip's goroutines to end", func() bool { return hopGoroutines() == 0 })
				}
			})
		}
	}
}

// lateFailingBody is a request body that fails after n bytes, as a
// client's body does when the client leaves part-way.
type lateFailingBody struct{ n int }

func (b *lateFailingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errGone
	}
	n := min(len(p), b.n)
	clear(p[:n])
	b.n -= n
	return n, nil
}

// TestRequestFailsBehindItsReply: a request whose body fails part-way,
// after the upstream has answered 200 and streams its reply while it
// reads on (an echo), leaves the upstream waiting for the rest, which
// will not come: the reply's read fails, saying why (the body's error),
// as net/http's Transport cuts a reply when its write fails, rather than
// waiting on the upstream. The connection is not reused.
func TestRequestFailsBehindItsReply(t *testing.T) {
	srv := duplexUpstream(t)
	for _, rt := range []struct {
		name string
		rt   http.RoundTripper
	}{{"net/http", &http.Transport{}}, {"hop", newTransport(t)}} {
		t.Run(rt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/echo", io.NopCloser(&lateFailingBody{n: duplexSize}))
			req.ContentLength = 2 * duplexSize
			resp, err := rt.rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v; want the upstream's 200", err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil || ctx.Err() != nil {
				t.Fatalf("read %d bytes of the reply, then %v (the guard: %v); want the reply cut", n, err, ctx.Err())
			}
			tr, ok := rt.rt.(*Transport)
			if !ok {
				return
			}
			if !errors.Is(err, errGone) {
				t.Errorf("the reply's read failed with %v, want the body's error", err)
			}
			if tr.Idle() != 0 {
				t.Errorf("the connection whose request failed was pooled")
			}
			waitFor(t, "the round trip's goroutines to end", func() bool { return hopGoroutines() == 0 })
		})
	}
}

func digest(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// hopGoroutines counts the goroutines of round trips still running: the
// watches of requests' writes, and the writes on goroutines of their own.
func hopGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	const pkg = "github.com/skills-sidecar/skills-sidecar/internal/hop."
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "\ncreated by "+pkg+"writeRequest ") || strings.Contains(g, "\ncreated by "+pkg+"(*peeker).watch ") {
			count++
		}
	}
	return count
}
