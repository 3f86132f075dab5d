package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The server's tests speak to it over loopback TCP with literal bytes and
// read its replies with net/http's response reader, which holds them to
// RFC 9112's framing.

// logBuf collects what a server logs.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start serves h on a loopback listener until the test ends.
func start(t *testing.T, h http.Handler, tune ...func(*Server)) (*Server, string, *logBuf) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	s := &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 8 << 10, ErrorLog: log.New(logs, "", 0)}
	for _, f := range tune {
		f(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, l.Addr().String(), logs
}

// dial opens a client connection that the test closes at its end.
func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// exchange writes raw on a new connection and reads one reply to method.
func roundTrip(t *testing.T, addr, raw, method string) (*http.Response, string) {
	t.Helper()
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	return readReply(t, br, method)
}

func readReply(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the reply's body: %v", err)
	}
	return resp, string(body)
}

// goneWait is how long a test waits for something a server must do and a
// broken one never does (a context canceled, a write failed, goroutines
// gone): a hang guard, not a measure, so a loaded machine's pauses fit in
// it. It stays under dial's ten-second deadline.
const goneWait = 8 * time.Second

// closedAfter reports whether the server closes c (EOF) within four
// seconds, with nothing more sent: time for a loaded machine, and under
// the test servers' ReadHeaderTimeout (5 s) and IdleTimeout (10 s), so a
// server that kept the connection for a next request does not pass.
func closedAfter(t *testing.T, c net.Conn, br *bufio.Reader) bool {
	t.Helper()
	return closedWithin(t, c, br, 4*time.Second)
}

// closedWithin is closedAfter with the wait d, for servers whose own
// timeouts are longer (bothSlow's): there d is a hang guard.
func closedWithin(t *testing.T, c net.Conn, br *bufio.Reader, d time.Duration) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := br.ReadByte()
	if err == nil {
		t.Fatalf("unexpected byte %q after the reply", b)
	}
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset")
}

func echo() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-Uri", r.RequestURI)
		w.Header().Set("X-Host", r.Host)
		w.Write(b)
	})
}

func TestKeepAliveRequestsGetLengthDelimitedReplies(t *testing.T) {
	_, addr, _ := start(t, echo())
	c, br := dial(t, addr)
	for i, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, "", "x"} {
		raw := "POST /mcp?x=1 HTTP/1.1\r\nHost: side.car\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		resp, got := readReply(t, br, "POST")
		if resp.StatusCode != 200 || got != body || resp.ContentLength != int64(len(body)) || resp.Close {
			t.Fatalf("request %d: status %d, body %q, length %d, close %v", i, resp.StatusCode, got, resp.ContentLength, resp.Close)
		}
		if resp.Header.Get("X-Uri") != "/mcp?x=1" || resp.Header.Get("X-Host") != "side.car" || resp.Header.Get("Date") == "" {
			t.Fatalf("request %d: header %v", i, resp.Header)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
