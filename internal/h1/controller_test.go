package h1

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"
)

// A handler's goroutine blocked reading a body the client stalls, and a
// second goroutine acting on the connection through
// http.ResponseController, as net/http allows: SetReadDeadline is how a
// handler unblocks a stuck read, and Hijack takes the connection from
// under it. Run under -race, both servers.

// bodyRead is what a goroutine's reads of a body came to.
type bodyRead struct {
	n   int
	err error
}

// stalledBody sends a POST whose Content-Length is 10 with 3 bytes of its
// body, then nothing more, to addr.
func stalledBody(t *testing.T, addr string) (*bufio.Reader, func(string)) {
	t.Helper()
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc"); err != nil {
		t.Fatal(err)
	}
	return br, func(s string) {
		if _, err := io.WriteString(c, s); err != nil {
			t.Error(err)
		}
	}
}

// readStalled reads r's body on a new goroutine: the 3 bytes that came
// (first is closed then), then the rest, where it waits. The channel
// gets what the second read came to.
func readStalled(r *http.Request) (first chan struct{}, rest chan bodyRead) {
	first, rest = make(chan struct{}), make(chan bodyRead, 1)
	go func() {
		buf := make([]byte, 10)
		n, err := io.ReadAtLeast(r.Body, buf, 3)
		close(first)
		if err != nil || n != 3 || string(buf[:3]) != "abc" {
			rest <- bodyRead{n, errors.Join(errors.New("the first 3 bytes"), err)}
			return
		}
		n, err = r.Body.Read(buf[3:])
		rest <- bodyRead{n, err}
	}()
	return first, rest
}

// TestSetReadDeadlineUnblocksBodyRead: another goroutine's
// SetReadDeadline(time.Now()) ends the read promptly with a timeout
// error (os.ErrDeadlineExceeded), having taken nothing. Whether the read
// is already waiting on the socket (the setter waits 50 ms first, which
// most runs make the case) or about to (the setter goes at once, racing
// the read's own move of the deadline), the deadline holds: the read must
// not lift it.
func TestSetReadDeadlineUnblocksBodyRead(t *testing.T) {
	both(t, func(t *testing.T, serve serveFunc) {
		for _, delay := range []time.Duration{50 * time.Millisecond, 0} {
			got := make(chan bodyRead, 1)
			addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				first, rest := readStalled(r)
				<-first
				set := make(chan error, 1)
				go func() {
					time.Sleep(delay)
					set <- http.NewResponseController(w).SetReadDeadline(time.Now())
				}()
				var res bodyRead
				select {
				case res = <-rest:
				case <-time.After(goneWait):
					res = bodyRead{-1, errors.New("the read still waits, " + goneWait.String() + " after the deadline was set")}
				}
				if err := <-set; err != nil {
					res.err = errors.Join(errors.New("SetReadDeadline"), err)
				}
				got <- res
				w.WriteHeader(http.StatusNoContent)
			}))
			br, _ := stalledBody(t, addr)
			res := <-got
			if res.n != 0 || !errors.Is(res.err, os.ErrDeadlineExceeded) {
				t.Fatalf("set after %v, the stalled read: %d bytes, %v; want 0 and a deadline exceeded", delay, res.n, res.err)
			}
			if resp, _ := readReply(t, br, "POST"); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("set after %v: status %d", delay, resp.StatusCode)
			}
		}
	})
}

// TestHijackDuringBodyRead: another goroutine hijacks the connection
// while the read waits. net/http's Hijack stops the connection's read in
// progress (connReader.abortPendingRead: a deadline in the past, then it
// waits for that socket read to return), clears the deadlines and gives
// the buffered reader: the read returns a timeout error having taken no
// byte, and every byte the client sends after is the hijacker's. The
// hijacker echoes a line the client sends once it is told the connection
// is taken. net/http's Hijack returns once the socket read has, while the
// body's read around it may still be updating the buffered reader it
// hands over (the race detector sees the hijacker's reads race with it),
// so its hijacker here waits for the body's read to return before it
// reads. This server's Hijack returns only once the body's read has
// (strict): its hijacker reads first, and the race detector holds it to
// that.
func TestHijackDuringBodyRead(t *testing.T) {
	t.Run("net/http", func(t *testing.T) { hijackDuringBodyRead(t, netServer, false) })
	t.Run("h1", func(t *testing.T) { hijackDuringBodyRead(t, ownServer, true) })
}

func hijackDuringBodyRead(t *testing.T, serve serveFunc, strict bool) {
	got := make(chan bodyRead, 1)
	echoed := make(chan string, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, rest := readStalled(r)
		<-first
		hijacked := make(chan struct{})
		go func() {
			defer close(hijacked)
			time.Sleep(50 * time.Millisecond)
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				got <- bodyRead{-1, err}
				echoed <- "Hijack: " + err.Error()
				return
			}
			defer conn.Close()
			if !strict {
				got <- <-rest // it was stopped: its socket read has returned
			}
			conn.SetDeadline(time.Now().Add(goneWait))
			io.WriteString(conn, "taken\n")
			line, err := brw.Reader.ReadString('\n')
			if err != nil {
				line += " (" + err.Error() + ")"
			}
			echoed <- line
			io.WriteString(conn, line)
			if strict {
				// Only now: until here nothing but Hijack orders the
				// hijacker's reads after the body's.
				got <- <-rest
			}
		}()
		<-hijacked
	}))
	br, send := stalledBody(t, addr)
	if line, err := br.ReadString('\n'); line != "taken\n" {
		select {
		case res := <-got:
			t.Fatalf("waiting for the hijacker: %q, %v (the read: %d bytes, %v)", line, err, res.n, res.err)
		default:
			t.Fatalf("waiting for the hijacker: %q, %v (Hijack has not returned)", line, err)
		}
	}
	const line = "0123456789 all of it\n"
	send(line)
	res := <-got
	if res.n != 0 || !errors.Is(res.err, os.ErrDeadlineExceeded) {
		t.Errorf("the read the hijack stopped: %d bytes, %v; want 0 and a deadline exceeded", res.n, res.err)
	}
	if e := <-echoed; e != line {
		t.Fatalf("the hijacker read %q, want %q", e, line)
	}
	if back, err := br.ReadString('\n'); back != line {
		t.Fatalf("echoed back %q, %v", back, err)
	}
}

// TestBodyReadAfterHijackRefused: a read of the body that starts after
// Hijack (none was under way) gets http.ErrHijacked at once and takes no
// byte from the hijacker. net/http leaves this undefined (its body would
// read the socket: Request.Body must not be used after Hijack); this
// server refuses it.
func TestBodyReadAfterHijackRefused(t *testing.T) {
	got := make(chan string, 1)
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 10)
		if n, err := io.ReadAtLeast(r.Body, buf, 3); n != 3 || err != nil {
			got <- "the first 3 bytes: " + err.Error()
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			got <- "Hijack: " + err.Error()
			return
		}
		defer conn.Close()
		if n, err := r.Body.Read(buf); n != 0 || !errors.Is(err, http.ErrHijacked) {
			got <- "the read after Hijack: " + itoa(n) + " bytes, " + errors.Join(err).Error()
			return
		}
		conn.SetDeadline(time.Now().Add(goneWait))
		io.WriteString(conn, "taken\n")
		line, _ := brw.Reader.ReadString('\n')
		got <- line
	}))
	br, send := stalledBody(t, addr)
	if line, err := br.ReadString('\n'); line != "taken\n" {
		select {
		case e := <-got:
			t.Fatalf("waiting for the hijacker: %q, %v (%s)", line, err, e)
		default:
			t.Fatalf("waiting for the hijacker: %q, %v (no word from the handler)", line, err)
		}
	}
	const line = "0123456789 all of it\n"
	send(line)
	if e := <-got; e != line {
		t.Fatalf("the hijacker: %q, want %q", e, line)
	}
}
