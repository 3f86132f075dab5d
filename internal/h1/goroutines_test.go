package h1

import (
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serverGoroutines returns the stacks of the goroutines, other than the
// caller's, that the server made or is running: those with a frame, or a
// "created by" line, in one of this package's non-test files. Once a
// server is closed and its connections are gone there must be none, so a
// test that compares with zero catches a single leaked goroutine, where a
// count of all goroutines against a baseline needs slack for the runtime's
// and the testing package's own.
func serverGoroutines() []string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	// runtime.Stack puts the caller's goroutine first.
	for _, g := range strings.Split(string(buf), "\n\n")[1:] {
		for _, line := range strings.Split(g, "\n") {
			file, _, ok := strings.Cut(strings.TrimSpace(line), ".go:")
			if ok && strings.Contains(file, "/internal/h1/") && !strings.HasSuffix(file, "_test") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// awaitServerGoroutines polls serverGoroutines until want holds of how
// many there are, or goneWait has passed, and returns the last stacks.
func awaitServerGoroutines(want func(n int) bool) []string {
	left := serverGoroutines()
	for end := time.Now().Add(goneWait); !want(len(left)) && time.Now().Before(end); left = serverGoroutines() {
		time.Sleep(10 * time.Millisecond)
	}
	return left
}

// assertNoServerGoroutines waits up to goneWait for the server's
// goroutines to end and fails the test with the stacks of any left.
func assertNoServerGoroutines(t *testing.T) {
	t.Helper()
	if left := awaitServerGoroutines(func(n int) bool { return n == 0 }); len(left) > 0 {
		t.Fatalf("%d goroutines of the server left:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// The leak check's own test: it sees the goroutine of one idle
// keep-alive connection (so one leaked goroutine fails a test), and none
// once the connection and the server are closed.
func TestServerGoroutinesSeesOneConnection(t *testing.T) {
	assertNoServerGoroutines(t) // nothing of an earlier test's server
	s, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	waitFor := func(want func(int) bool) int { return len(awaitServerGoroutines(want)) }
	idle := waitFor(func(n int) bool { return n > 0 })
	if idle == 0 {
		t.Fatal("no goroutine seen for a serving server (its accept loop)")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	if n := waitFor(func(n int) bool { return n > idle }); n <= idle {
		t.Fatalf("%d goroutines with a connection held open, %d without: the check cannot see one left behind", n, idle)
	}
	c.Close()
	if n := waitFor(func(n int) bool { return n == idle }); n != idle {
		t.Fatalf("%d goroutines after the connection closed, want %d", n, idle)
	}
	s.Close()
	assertNoServerGoroutines(t)
}
