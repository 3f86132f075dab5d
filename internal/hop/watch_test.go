//go:build unix

package hop

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestWatchLeavesNoDeadline: a watch that saw the upstream's answer only
// after the request was out (a quick answer), and one that saw nothing,
// leave the connection as they found it: the next write and the next
// read are not cut short by a deadline of the watch's.
func TestWatchLeavesNoDeadline(t *testing.T) {
	for _, answer := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		up, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		stop := newPeeker(nc).watch(nc)
		if answer {
			up.Write([]byte("a"))
			waitFor(t, "the watch to see the answer", func() bool {
				// The watch's own deadline on writes is what it sets when it
				// sees one: a write fails at once.
				_, err := nc.Write(nil)
				return err != nil
			})
		}
		if saw := stop(); saw != answer {
			t.Fatalf("answered %v: the watch saw %v", answer, saw)
		}
		if _, err := nc.Write([]byte("next")); err != nil {
			t.Errorf("answered %v: a write after the watch: %v", answer, err)
		}
		go func() {
			time.Sleep(100 * time.Millisecond) // the read below waits for it
			up.Write([]byte("b"))
		}()
		buf := make([]byte, 2)
		want := "ab"
		if !answer {
			want = "b"
		}
		if _, err := io.ReadFull(nc, buf[:len(want)]); err != nil || string(buf[:len(want)]) != want {
			t.Errorf("answered %v: a read after the watch: %q, %v", answer, buf[:len(want)], err)
		}
	}
}
