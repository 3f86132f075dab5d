//go:build linux && !386

package rawsock

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests hold the raw reader and writer to what net.Conn's Read and
// Write do (read(2) and write(2) in Go's poller), case by case, with a real
// socket and a plain peer. The same checks run against net.Conn itself (the
// reference: a check that fails there is wrong) and against deliberately
// broken wrappers, each of which must fail the checks named for its fault.

// way is how a check reads and writes the connection under test.
type way struct {
	name string
	r    func(net.Conn) io.Reader
	w    func(net.Conn) io.Writer
}

var (
	reference = way{"net.Conn", func(c net.Conn) io.Reader { return c }, func(c net.Conn) io.Writer { return c }}
	raw       = way{"rawsock", NewReader, NewWriter}
)

// pair is a connected (under test, peer) couple.
type pair func(t *testing.T) (net.Conn, net.Conn)

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, ln, "tcp")
}

func unixPair(t *testing.T) (net.Conn, net.Conn) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, ln, "unix")
}

func connect(t *testing.T, ln net.Listener, network string) (net.Conn, net.Conn) {
	defer ln.Close()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		got <- c
	}()
	a, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-got
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

type check struct {
	name  string
	pairs []pair
	run   func(t *testing.T, a, b net.Conn, w way) error
}

// opShape says whether err is what net.Conn gives for op with cause:
// a *net.OpError named op whose cause errors.Is target.
func opShape(err error, op string, target error) error {
	var oe *net.OpError
	if !errors.As(err, &oe) {
		return fmt.Errorf("error %v (%T) is not a *net.OpError", err, err)
	}
	if oe.Op != op {
		return fmt.Errorf("error %v: Op %q, want %q", err, oe.Op, op)
	}
	if !errors.Is(err, target) {
		return fmt.Errorf("error %v is not %v", err, target)
	}
	return nil
}

// sysShape also wants the cause as net.Conn wraps an errno: an
// *os.SyscallError named for the call.
func sysShape(err error, op string, targets ...error) error {
	var se *os.SyscallError
	if !errors.As(err, &se) || se.Syscall != op {
		return fmt.Errorf("error %v: cause is not an *os.SyscallError of %q", err, op)
	}
	for _, target := range targets {
		if opShape(err, op, target) == nil {
			return nil
		}
	}
	return fmt.Errorf("error %v is none of %v", err, targets)
}

var checks = []check{
	{"echo", []pair{tcpPair, unixPair}, func(t *testing.T, a, b net.Conn, w way) error {
		return oneWayData(w.w(a), b, b, w.r(a))
	}},
	{"waits for data", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		return waitsForData(w.r(a), b)
	}},
	{"end of stream", []pair{tcpPair, unixPair}, func(t *testing.T, a, b net.Conn, w way) error {
		return endOfStream(w.r(a), b, b.Close)
	}},
	{"half close", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		b.(*net.TCPConn).CloseWrite()
		if n, err := w.r(a).Read(make([]byte, 4)); n != 0 || err != io.EOF {
			return fmt.Errorf("read after the peer's FIN: %d, %v; want 0, io.EOF", n, err)
		}
		if _, err := w.w(a).Write([]byte("still")); err != nil {
			return fmt.Errorf("write after the peer's FIN: %v", err)
		}
		buf := make([]byte, 8)
		n, err := io.ReadAtLeast(b, buf, 5)
		if err != nil || string(buf[:n]) != "still" {
			return fmt.Errorf("peer read %q, %v", buf[:n], err)
		}
		return nil
	}},
	{"deadline passed", []pair{tcpPair, unixPair}, func(t *testing.T, a, b net.Conn, w way) error {
		a.SetReadDeadline(time.Now().Add(-time.Second))
		n, err := w.r(a).Read(make([]byte, 4))
		if n != 0 {
			return fmt.Errorf("read %d bytes past the deadline", n)
		}
		if err := opShape(err, "read", os.ErrDeadlineExceeded); err != nil {
			return err
		}
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			return fmt.Errorf("error %v is not a timeout", err)
		}
		_, ref := a.Read(make([]byte, 4))
		if err.Error() != ref.Error() {
			return fmt.Errorf("error %q, net.Conn says %q", err, ref)
		}
		return nil
	}},
	{"deadline while waiting", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		a.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		_, err := w.r(a).Read(make([]byte, 4))
		return opShape(err, "read", os.ErrDeadlineExceeded)
	}},
	{"closed while waiting", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		go func() {
			time.Sleep(20 * time.Millisecond)
			a.Close()
		}()
		_, err := w.r(a).Read(make([]byte, 4))
		return opShape(err, "read", net.ErrClosed)
	}},
	{"closed before", []pair{tcpPair, unixPair}, func(t *testing.T, a, b net.Conn, w way) error {
		r, wr := w.r(a), w.w(a)
		a.Close()
		_, err := r.Read(make([]byte, 4))
		if err := opShape(err, "read", net.ErrClosed); err != nil {
			return err
		}
		_, ref := a.Read(make([]byte, 4))
		if err.Error() != ref.Error() {
			return fmt.Errorf("error %q, net.Conn says %q", err, ref)
		}
		n, err := wr.Write([]byte("x"))
		if n != 0 {
			return fmt.Errorf("wrote %d bytes to a closed connection", n)
		}
		return opShape(err, "write", net.ErrClosed)
	}},
	{"reset by peer", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		b.(*net.TCPConn).SetLinger(0)
		b.Close()
		_, err := w.r(a).Read(make([]byte, 4))
		return sysShape(err, "read", syscall.ECONNRESET)
	}},
	{"write to a reset peer", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		b.(*net.TCPConn).SetLinger(0)
		b.Close()
		wr := w.w(a)
		for range 200 {
			if _, err := wr.Write([]byte("x")); err != nil {
				return sysShape(err, "write", syscall.EPIPE, syscall.ECONNRESET)
			}
			time.Sleep(time.Millisecond)
		}
		return errors.New("writes to a reset peer kept succeeding")
	}},
	{"big write", []pair{tcpPair, unixPair}, func(t *testing.T, a, b net.Conn, w way) error {
		return bigWrite(w.w(a), b, a.Close)
	}},
	{"write deadline counts what left", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		return deadlineCounts(w.w(a), 64<<20, // more than the socket buffers: the write must wait, then time out
			func() { a.SetWriteDeadline(time.Now().Add(200 * time.Millisecond)) },
			func(err error) error { return opShape(err, "write", os.ErrDeadlineExceeded) },
			a.Close, b, func() { b.SetReadDeadline(time.Now().Add(5 * time.Second)) })
	}},
	{"empty", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		return emptyCalls(w.r(a), w.w(a))
	}},
	{"both ways at once", []pair{tcpPair}, func(t *testing.T, a, b net.Conn, w way) error {
		const size = 2 << 20
		out, in := make([]byte, size), make([]byte, size)
		rand.Read(out)
		rand.Read(in)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		wg.Add(4)
		go func() { defer wg.Done(); _, err := w.w(a).Write(out); errs <- err }()
		go func() { defer wg.Done(); _, err := b.Write(in); errs <- err }()
		var fromA, fromB []byte
		go func() {
			defer wg.Done()
			fromA = make([]byte, size)
			_, err := io.ReadFull(b, fromA)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			fromB = make([]byte, size)
			_, err := io.ReadFull(w.r(a), fromB)
			errs <- err
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		if !bytes.Equal(fromA, out) || !bytes.Equal(fromB, in) {
			return errors.New("bytes differ after a full-duplex exchange")
		}
		return nil
	}},
}

func runCheck(t *testing.T, c check, p pair, w way) error {
	a, b := p(t)
	return c.run(t, a, b, w)
}

func TestLikeNetConn(t *testing.T) {
	for _, w := range []way{reference, raw} {
		for _, c := range checks {
			for i, p := range c.pairs {
				t.Run(fmt.Sprintf("%s/%s/%d", w.name, c.name, i), func(t *testing.T) {
					if err := runCheck(t, c, p, w); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}

// broken wrappers, each with the checks its fault must fail.
var broken = []struct {
	way   way
	fails []string
}{
	{way{"end of stream as nothing read", func(c net.Conn) io.Reader { return eofAsNil{NewReader(c)} }, NewWriter},
		[]string{"end of stream", "half close"}},
	{way{"bare errors", func(c net.Conn) io.Reader { return bare{r: NewReader(c)} }, func(c net.Conn) io.Writer { return bare{w: NewWriter(c)} }},
		[]string{"deadline passed", "deadline while waiting", "closed while waiting", "closed before", "reset by peer", "write to a reset peer"}},
	{way{"a short write said whole", NewReader, func(c net.Conn) io.Writer { return shortWrite{NewWriter(c)} }},
		[]string{"big write"}},
	{way{"no count on error", NewReader, func(c net.Conn) io.Writer { return noCount{NewWriter(c)} }},
		[]string{"write deadline counts what left"}},
}

type eofAsNil struct{ io.Reader }

func (r eofAsNil) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

type bare struct {
	r io.Reader
	w io.Writer
}

func unwrap(err error) error {
	if oe, ok := err.(*net.OpError); ok {
		return oe.Err
	}
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
func (b bare) Read(p []byte) (int, error)  { n, err := b.r.Read(p); return n, unwrap(err) }
func (b bare) Write(p []byte) (int, error) { n, err := b.w.Write(p); return n, unwrap(err) }

type shortWrite struct{ io.Writer }

func (w shortWrite) Write(p []byte) (int, error) {
	_, err := w.Writer.Write(p[:min(len(p), 64<<10)])
	return len(p), err
}

type noCount struct{ io.Writer }

func (w noCount) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	if err != nil {
		n = 0
	}
	return n, err
}

func TestBrokenWrappersFail(t *testing.T) {
	byName := map[string]check{}
	for _, c := range checks {
		byName[c.name] = c
	}
	for _, b := range broken {
		for _, name := range b.fails {
			c, ok := byName[name]
			if !ok {
				t.Fatalf("no check %q", name)
			}
			t.Run(b.way.name+"/"+name, func(t *testing.T) {
				if err := runCheck(t, c, c.pairs[0], b.way); err == nil {
					t.Errorf("check %q passed a wrapper whose fault is %q", name, b.way.name)
				}
			})
		}
	}
}

func TestRawPathOnlyForStreamSockets(t *testing.T) {
	a, _ := tcpPair(t)
	if _, ok := NewReader(a).(*Reader); !ok {
		t.Error("a TCP connection did not get the raw reader")
	}
	if _, ok := NewWriter(a).(*Writer); !ok {
		t.Error("a TCP connection did not get the raw writer")
	}
	u, _ := unixPair(t)
	if _, ok := NewReader(u).(*Reader); !ok {
		t.Error("a Unix stream connection did not get the raw reader")
	}
	p, q := net.Pipe()
	defer p.Close()
	defer q.Close()
	if r := NewReader(p); r != io.Reader(p) {
		t.Errorf("net.Pipe got %T, want itself", r)
	}
	path := filepath.Join(t.TempDir(), "g")
	g, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if r := NewReader(g); r != io.Reader(g) {
		t.Errorf("a datagram socket got %T, want itself (a zero-byte datagram is not the end)", r)
	}
}

func TestPeek(t *testing.T) {
	a, b := tcpPair(t)
	rc, err := a.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var buf [1]byte
	peekOnce := func() (int, error) {
		var n int
		var perr error
		if err := rc.Read(func(fd uintptr) bool { n, perr = Peek(fd, buf[:]); return true }); err != nil {
			t.Fatal(err)
		}
		return n, perr
	}
	if n, err := peekOnce(); n != 0 || !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("peek at a quiet socket: %d, %v; want 0, EAGAIN", n, err)
	}
	b.Write([]byte("z"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := peekOnce()
		if n == 1 && err == nil && buf[0] == 'z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("peek never saw the byte written: %d, %v", n, err)
		}
		time.Sleep(time.Millisecond)
	}
	got := make([]byte, 1)
	if _, err := io.ReadFull(a, got); err != nil || got[0] != 'z' {
		t.Fatalf("the peeked byte was taken: read %q, %v", got, err)
	}
	b.Close()
	for {
		n, err := peekOnce()
		if n == 0 && err == nil {
			break // end of stream
		}
		if time.Now().After(deadline) {
			t.Fatalf("peek never saw the end of stream: %d, %v", n, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// A read or write of ready bytes allocates nothing: they sit on every
// forwarded request's path, whose allocations are counted.
func TestNoAllocations(t *testing.T) {
	a, b := tcpPair(t)
	r, w := NewReader(a), NewWriter(a)
	noAllocs(t, w, b, b, r)
}

// Bytes through a socket order what happened before the write before
// what happens after the read, and the race detector must know it,
// whichever end uses the raw calls: under -race this test fails ("race
// detected") if the raw calls leave the syscall package's order.
func TestOrderedForTheRaceDetector(t *testing.T) {
	a, b := tcpPair(t)
	var before, after int
	go func() {
		before = 1
		b.Write([]byte{1}) // net.Conn's write
	}()
	buf := make([]byte, 1)
	if _, err := io.ReadFull(NewReader(a), buf); err != nil {
		t.Fatal(err)
	}
	if before != 1 {
		t.Fatal("the write before the bytes is not seen after them")
	}
	done := make(chan int)
	go func() {
		p := make([]byte, 1)
		io.ReadFull(b, p) // net.Conn's read
		done <- after
	}()
	after = 1
	if _, err := NewWriter(a).Write([]byte{2}); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != 1 {
		t.Fatalf("the reader saw %d", got)
	}
}
