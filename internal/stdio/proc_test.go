package stdio

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/rawsock"
)

// A child that stops reading its stdin does not hold a write past its
// deadline, with the pipe written through rawsock's raw path: the deadline
// is set on the *os.File and the raw writer keeps it.
func TestWriteDeadlineBoundsAStuckChild(t *testing.T) {
	argv, env := testCommand(t, "sleep") // never reads its stdin
	p, err := startProcess(argv, env, zap.NewNop(), "stuck", func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(100 * time.Millisecond)
	if _, ok := p.in.(*rawsock.FileWriter); !ok {
		t.Errorf("stdin is written through %T, not rawsock's raw writer", p.in)
	}
	if _, ok := p.out.(*rawsock.FileReader); !ok {
		t.Errorf("stdout is read through %T, not rawsock's raw reader", p.out)
	}
	line := append(bytes.Repeat([]byte("x"), 1<<20), '\n') // more than the pipe holds
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.write(line, time.Now().Add(100*time.Millisecond)) }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("write to a child not reading: %v, want the deadline exceeded", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the write returned after %v, its deadline was 100ms", d)
		}
	case <-time.After(5 * time.Second):
		t.Error("the write to a child not reading outlived its deadline by 5s")
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL) // the write then fails (EPIPE) and stop can run
		<-done
	}
}
