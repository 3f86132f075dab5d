package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errNotReady is returned when a child does not become ready in time.
var errNotReady = errors.New("soak: not ready")

// Build compiles the sidecar and the demo upstream from the module at
// moduleDir into dir, with the race detector when race is set, and returns
// their paths.
func Build(ctx context.Context, moduleDir, dir string, race bool) (sidecar, upstream string, err error) {
	sidecar = filepath.Join(dir, "skills-sidecar")
	upstream = filepath.Join(dir, "demo-upstream")
	for bin, pkg := range map[string]string{sidecar: "./cmd/skills-sidecar", upstream: "./cmd/demo-upstream"} {
		args := []string{"build", "-o", bin}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
		cmd.Dir = moduleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %w: %s", pkg, err, bytes.TrimSpace(out))
		}
	}
	return sidecar, upstream, nil
}

// ModuleDir returns the root of the module the current directory is in.
func ModuleDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module: run the soak from the repository")
	}
	return filepath.Dir(mod), nil
}

// Process is a child the soak started; it is stopped by its pid only.
type Process struct {
	// Name labels the process in errors and the report.
	Name string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error
}

// Start runs bin with args in a process group of its own (so a terminal's
// SIGINT reaches only the soak, which then stops its children in order).
// Its output is kept in a tail buffer; each line is also passed to onLine
// when it is not nil. The caller must call Stop or Kill.
func Start(name, bin string, args []string, onLine func(string)) (*Process, error) {
	cmd := exec.Command(bin, args...)
	out := &tailBuffer{max: 32 << 10}
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
			out.Write(append(sc.Bytes(), '\n'))
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

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr returns how the process ended, once it has.
func (p *Process) ExitErr() error {
	<-p.done
	return p.err
}

// Output returns the tail of what the process wrote.
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

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// WaitFor calls probe every 50ms until it succeeds, p exits, ctx ends or
// timeout passes.
func WaitFor(ctx context.Context, p *Process, timeout time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before it was ready: %s", p.Name, lastLines(p.Output(), 5))
		}
		if last = probe(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s after %v: %w", errNotReady, nameOf(p), timeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func nameOf(p *Process) string {
	if p == nil {
		return "probe"
	}
	return p.Name
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
