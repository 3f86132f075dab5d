//go:build linux && !386

package rawsock

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"testing"
	"time"
)

// The checks sockets and pipes share: each takes the raw (or reference)
// reader or writer under test and the plain end across from it.

// oneWayData writes "hello" through w, which the plain peer reads, then
// "world" from the plain peer, which r reads.
func oneWayData(w io.Writer, peerR io.Reader, peerW io.Writer, r io.Reader) error {
	if n, err := w.Write([]byte("hello")); n != 5 || err != nil {
		return fmt.Errorf("write: %d, %v", n, err)
	}
	buf := make([]byte, 16)
	n, err := io.ReadAtLeast(peerR, buf, 5)
	if err != nil || string(buf[:n]) != "hello" {
		return fmt.Errorf("peer read %q, %v; want hello", buf[:n], err)
	}
	if _, err := peerW.Write([]byte("world")); err != nil {
		return err
	}
	n, err = io.ReadAtLeast(r, buf, 5)
	if err != nil || string(buf[:n]) != "world" {
		return fmt.Errorf("read %q, %v; want world", buf[:n], err)
	}
	return nil
}

// waitsForData reads through r what the peer writes 20 ms later.
func waitsForData(r io.Reader, peerW io.Writer) error {
	go func() {
		time.Sleep(20 * time.Millisecond)
		peerW.Write([]byte("late"))
	}()
	buf := make([]byte, 16)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "late" {
		return fmt.Errorf("read %q, %v; want late", buf[:n], err)
	}
	return nil
}

// endOfStream reads "last" through r, which the peer wrote before closing,
// then io.EOF itself, twice; bounded, so a reader that never says EOF fails.
func endOfStream(r io.Reader, peerW io.Writer, closePeer func() error) error {
	peerW.Write([]byte("last"))
	closePeer()
	var got []byte
	buf := make([]byte, 16)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		var n int
		n, err = r.Read(buf)
		got = append(got, buf[:n]...)
	}
	if err != io.EOF || string(got) != "last" {
		return fmt.Errorf("read %q, %v; want last then io.EOF itself", got, err)
	}
	if n, err := r.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		return fmt.Errorf("read after the end: %d, %v; want 0, io.EOF itself", n, err)
	}
	return nil
}

// bigWrite writes 8 MiB through w to a slow plain reader, which must read
// them all, in order; closeW ends the stream so a short write cannot hang.
func bigWrite(w io.Writer, peerR io.Reader, closeW func() error) error {
	want := make([]byte, 8<<20) // far more than a socket or a pipe holds: the writer meets a full one
	rand.Read(want)
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		p := make([]byte, 4096)
		for buf.Len() < len(want) {
			n, err := peerR.Read(p)
			buf.Write(p[:n])
			if err != nil {
				break
			}
		}
		got <- buf.Bytes()
	}()
	n, err := w.Write(want)
	closeW()
	if n != len(want) || err != nil {
		return fmt.Errorf("wrote %d of %d bytes, %v", n, len(want), err)
	}
	if g := <-got; !bytes.Equal(g, want) {
		return fmt.Errorf("the peer read %d bytes, not the %d written, in order", len(g), len(want))
	}
	return nil
}

// deadlineCounts writes size bytes through w, whose write deadline (set by
// deadline) passes before they fit; shape judges the error. The count the
// write returns must be what the plain peer then reads, to the end.
func deadlineCounts(w io.Writer, size int, deadline func(), shape func(error) error, closeW func() error, peerR io.Reader, peerDeadline func()) error {
	big := make([]byte, size)
	deadline()
	n, err := w.Write(big)
	if err := shape(err); err != nil {
		return err
	}
	if n <= 0 || n >= len(big) {
		return fmt.Errorf("wrote %d of %d bytes before the deadline", n, len(big))
	}
	closeW() // the peer then reads what was written, and the end
	peerDeadline()
	got, _ := io.Copy(io.Discard, peerR)
	if got != int64(n) {
		return fmt.Errorf("the write said %d bytes left, the peer read %d", n, got)
	}
	return nil
}

// emptyCalls reads and writes zero bytes: 0 and no error, as the
// reference gives.
func emptyCalls(r io.Reader, w io.Writer) error {
	if n, err := r.Read(nil); n != 0 || err != nil {
		return fmt.Errorf("empty read: %d, %v", n, err)
	}
	if n, err := w.Write(nil); n != 0 || err != nil {
		return fmt.Errorf("empty write: %d, %v", n, err)
	}
	return nil
}

// noAllocs fails t unless a write through w of what fromW then reads,
// and (with toR) a read through r of what toR writes, allocate nothing:
// they sit on every forwarded request's path, whose allocations are
// counted.
func noAllocs(t *testing.T, w io.Writer, fromW io.Reader, toR io.Writer, r io.Reader) {
	t.Helper()
	msg, buf := []byte("ping"), make([]byte, 4)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := w.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(fromW, buf); err != nil {
			t.Fatal(err)
		}
		if toR == nil {
			return
		}
		if _, err := toR.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per write and read, want 0", allocs)
	}
}
