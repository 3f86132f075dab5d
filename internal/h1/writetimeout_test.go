package h1

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
)

// wdCounter counts the moves of the write deadline on the connections of a
// listener. Its connections embed the TCP connection, so that the server
// still writes through package rawsock as in production.
type wdCounter struct {
	net.Listener
	moves atomic.Int64
}

type wdConn struct {
	*net.TCPConn
	moves *atomic.Int64
}

func (c wdConn) SetWriteDeadline(t time.Time) error {
	c.moves.Add(1)
	return c.TCPConn.SetWriteDeadline(t)
}

func (l *wdCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wdConn{TCPConn: c.(*net.TCPConn), moves: &l.moves}, nil
}

type writeTimeouter interface {
	SetWriteTimeout(time.Duration) error
}

// timeoutHandler bounds the reply of /timeout by SetWriteTimeout(d) and of
// /exact by SetWriteDeadline; /big writes n bytes after SetWriteTimeout(d)
// and reports the write's error on failed; anything else is a reply
// without a deadline.
func timeoutHandler(d time.Duration, n int, failed chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/timeout":
			if err := w.(writeTimeouter).SetWriteTimeout(d); err != nil {
				panic(err)
			}
		case "/exact":
			if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d)); err != nil {
				panic(err)
			}
		case "/big":
			if err := w.(writeTimeouter).SetWriteTimeout(d); err != nil {
				panic(err)
			}
			_, err := w.Write(bytes.Repeat([]byte("x"), n))
			failed <- err
			return
		}
		io.WriteString(w, r.URL.Path)
	}
}

// TestWriteTimeoutMovedLazily: SetWriteTimeout moves the write deadline
// once for requests that follow each other within the lazy delay on a
// connection; a request that sets none has the deadline lifted, and the
// next SetWriteTimeout sets it again; SetWriteDeadline moves it every
// time.
func TestWriteTimeoutMovedLazily(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := &wdCounter{Listener: l}
	serveOn(t, &Server{Handler: timeoutHandler(time.Minute, 0, nil), ReadHeaderTimeout: 5 * time.Second}, wl)
	c, br := dial(t, l.Addr().String())
	get := func(path string) {
		t.Helper()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", path)
		if _, body := readReply(t, br, "GET"); body != path {
			t.Fatalf("reply %q, want %q", body, path)
		}
	}
	// step wants want moves; when lazy is set, up to one more for each
	// lazy delay (300 ms for a minute's timeout) the requests took: a
	// loaded machine may stretch ten requests over a delay, and each delay
	// that passes may rightly move the deadline once more.
	step := func(what string, want int64, lazy bool, paths ...string) {
		t.Helper()
		before, start := wl.moves.Load(), time.Now()
		for _, p := range paths {
			get(p)
		}
		most := want
		if lazy {
			most += int64(time.Since(start) / lazydeadline.Delay(time.Minute))
		}
		if got := wl.moves.Load() - before; got < want || got > most {
			t.Errorf("%s: %d moves of the write deadline, want %d to %d", what, got, want, most)
		}
	}
	step("ten replies bounded by the same timeout, one after the other", 1, true,
		"/timeout", "/timeout", "/timeout", "/timeout", "/timeout", "/timeout", "/timeout", "/timeout", "/timeout", "/timeout")
	step("a reply without a deadline after them", 1, false, "/none")
	step("a reply bounded by the timeout after that", 1, false, "/timeout")
	step("two replies bounded by SetWriteDeadline", 2, false, "/exact", "/exact")
	step("a reply bounded by the timeout after those", 1, false, "/timeout")
}

// TestWriteTimeoutBoundsAfterALift: a deadline kept lazily and then lifted
// (a request without one) is set again by the next SetWriteTimeout: a
// client that stops reading that reply has its write fail.
func TestWriteTimeoutBoundsAfterALift(t *testing.T) {
	failed := make(chan error, 1)
	_, addr, _ := start(t, timeoutHandler(300*time.Millisecond, 64<<20, failed))
	c, br := dial(t, addr)
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	for _, p := range []string{"/timeout", "/none"} {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", p)
		readReply(t, br, "GET")
	}
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n") // and read none of it
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("64 MiB written to a client that reads nothing")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the write to a client that reads nothing did not time out")
	}
}
