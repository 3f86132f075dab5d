// Package childproc owns the child processes that the project's test and
// measurement tools (the benchmark harness, the soak run) start, watch and
// stop: each in a process group of its own, its output kept as a bounded
// tail, stopped only by its own pid. The sidecar itself never uses it.
package childproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tailSize bounds the output kept per process.
const tailSize = 32 << 10

// ErrNotReady is wrapped by WaitReady when the deadline passes.
var ErrNotReady = errors.New("childproc: not ready")

// Process is a started child. It is stopped by its pid only.
type Process struct {
	// Name labels the process in errors and reports.
	Name string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error
}

// Start runs bin with args in a process group of its own, so a terminal's
// SIGINT reaches only the tool, which then stops its children in order. env
// is added to the tool's own environment (nil: inherited as it is). Output
// is kept as a tail; each line also goes to onLine when it is not nil. The
// caller must call Stop or Kill.
func Start(name, bin string, args, env []string, onLine func(string)) (*Process, error) {
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out := &tailBuffer{max: tailSize}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, out: out, done: make(chan struct{})}
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			_, _ = out.Write(append(sc.Bytes(), '\n'))
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		p.err = cmd.Wait()
		_ = pw.Close()
		<-lines
		close(p.done)
	}()
	return p, nil
}

// PID returns the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has ended and its output is read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr waits for the process to end and returns how it ended.
func (p *Process) ExitErr() error {
	<-p.done
	return p.err
}

// Output returns the tail of what the process wrote, trimmed.
func (p *Process) Output() string { return p.out.String() }

// Stop sends SIGTERM to the pid, waits up to grace, then SIGKILL. It is
// safe to call more than once and on a nil Process.
func (p *Process) Stop(grace time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill sends SIGKILL to the pid, as a crash would end it, and waits.
func (p *Process) Kill() {
	if p == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// FreeAddr returns a loopback address whose port nothing listened on a
// moment ago, for a server that must be told its port up front or that
// binds it again after closing it. The port is taken from below the
// kernel's ephemeral range, as scripts/ports.sh's free_port does: outgoing
// connections and listeners on port 0 take their ports from that range, so
// a port inside it, once freed, can be taken by one of them before it is
// bound again ("address already in use"). One process never hands out a
// port twice. Where the range leaves too few ports below it, the port is
// the kernel's choice.
func FreeAddr() (string, error) {
	low := ephemeralLow()
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 100 {
		addr := "127.0.0.1:0"
		if low >= minPort+1000 {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(minPort+rand.IntN(low-minPort)))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use
		}
		addr = l.Addr().String()
		l.Close()
		if given[addr] {
			continue
		}
		given[addr] = true
		return addr, nil
	}
	return "", errors.New("find a free port: none free and not handed out already in 100 tries")
}

// minPort is the lowest port FreeAddr hands out, above the well-known and
// most registered services' ports.
const minPort = 10000

var (
	givenMu sync.Mutex
	given   = map[string]bool{} // the addresses FreeAddr has handed out
)

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// WaitReady calls probe every interval until it returns nil, p (when not
// nil) exits, ctx ends or timeout passes.
func WaitReady(ctx context.Context, p *Process, probe func(context.Context) error, interval, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before it was ready: %s", p.Name, LastLines(p.Output(), 5))
		}
		if last = probe(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			name := "probe"
			if p != nil {
				name = p.Name
			}
			return fmt.Errorf("%w: %s after %v: %w", ErrNotReady, name, timeout, last)
		case <-time.After(interval):
		}
	}
}

// LastLines returns the last n lines of s joined with " / ", for one-line
// error messages.
func LastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
