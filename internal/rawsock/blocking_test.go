//go:build linux && !386

package rawsock

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// A socket put in blocking mode behind the connection's back (os.File.Fd on
// a dup from TCPConn.File does it: the flag belongs to the open file, which
// the dup shares) must not hold a thread inside a raw read. A raw call is
// not in the scheduler's system-call state, so a read that sleeps in the
// kernel keeps its processor and a garbage collection cannot stop the
// world until a byte arrives: every goroutine of the process waits. The read
// must instead go back to the poller, where the collection and the read
// deadline reach it.
//
// A stopped world stops this test's own timers too, so the check runs in a
// child process the parent kills when it overruns.
func TestBlockingSocketDoesNotHoldTheThread(t *testing.T) {
	if os.Getenv("RAWSOCK_BLOCKING_CHILD") == "1" {
		blockingChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBlockingSocketDoesNotHoldTheThread$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RAWSOCK_BLOCKING_CHILD=1")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	out := make(chan []byte, 1)
	var runErr error
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { runErr = cmd.Wait(); out <- nil }()
	select {
	case <-out:
		if runErr != nil {
			t.Fatalf("the check failed in its process: %v\n%s", runErr, log.Bytes())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-out
		t.Fatal("the process hung: a garbage collection could not stop the world while a raw read waited on a blocking socket")
	}
}

func blockingChild(t *testing.T) {
	a, b := tcpPair(t)
	f, err := a.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Fd() // the shared open file is now in blocking mode

	a.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := NewReader(a).Read(make([]byte, 1))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // the read is under way

	gc := make(chan struct{})
	go func() { runtime.GC(); close(gc) }()
	select {
	case <-gc:
	case <-time.After(3 * time.Second):
		b.Write([]byte("x")) // frees the read, then the collection, so the test ends
		<-gc
		<-done
		t.Fatal("a garbage collection could not stop the world while a raw read waited on a blocking socket")
	}
	select {
	case err := <-done:
		if err := opShape(err, "read", os.ErrDeadlineExceeded); err != nil {
			t.Error(err)
		}
	case <-time.After(3 * time.Second):
		b.Write([]byte("x"))
		<-done
		t.Error("a raw read of a blocking socket ignored its deadline")
	}
}
