package childproc

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

func TestStartOutputStop(t *testing.T) {
	t.Parallel()
	var lines atomic.Int32
	p, err := Start("sh", "/bin/sh", []string{"-c", `echo "$GREETING"; echo second; exec sleep 30`}, []string{"GREETING=hello"}, func(string) { lines.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	testwait.For(t, time.Minute, func() bool { return lines.Load() >= 2 }, "the two lines")
	if got := p.Output(); got != "hello\nsecond" {
		t.Errorf("Output() = %q, want the two lines, env applied", got)
	}
	if p.Exited() {
		t.Fatal("Exited() = true while sleeping")
	}
	p.Stop(time.Second)
	if !p.Exited() || p.ExitErr() == nil {
		t.Errorf("after Stop: Exited %v, ExitErr %v; want ended by a signal", p.Exited(), p.ExitErr())
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{max: 8}
	_, _ = b.Write([]byte("0123456789"))
	_, _ = b.Write([]byte("ab"))
	if got := b.String(); got != "456789ab" {
		t.Errorf("tail = %q, want the last 8 bytes", got)
	}
}

func TestWaitReady(t *testing.T) {
	t.Parallel()
	calls := 0
	err := WaitReady(context.Background(), nil, func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}, time.Millisecond, 10*time.Second)
	if err != nil || calls != 3 {
		t.Errorf("WaitReady = %v after %d probes, want success on the third", err, calls)
	}
	err = WaitReady(context.Background(), nil, func(context.Context) error { return errors.New("never") }, time.Millisecond, 50*time.Millisecond)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "never") {
		t.Errorf("WaitReady on a probe that never succeeds = %v, want ErrNotReady naming the last error", err)
	}
	p, err := Start("false", "/bin/false", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitReady(context.Background(), p, func(context.Context) error { return errors.New("down") }, time.Millisecond, 10*time.Second); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("WaitReady on an exited process = %v, want an exited error", err)
	}
}

// TestFreeAddrBelowTheEphemeralRange: the ports handed out are below the
// kernel's ephemeral range (where no outgoing connection takes one; on a
// machine whose range leaves too few below it, the kernel's choice), never
// the same twice in a process, and free to listen on.
func TestFreeAddrBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	below := low >= minPort+1000
	seen := map[string]bool{}
	for range 50 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		if below && (p < minPort || p >= low) {
			t.Fatalf("FreeAddr gave port %d, want one in [%d, %d)", p, minPort, low)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr gave %s twice", addr)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on the free %s: %v", addr, err)
		}
		l.Close()
	}
}
