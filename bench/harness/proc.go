package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/childproc"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// Process is a child process the harness started and will stop by its pid.
type Process = childproc.Process

// StartProcess starts bin with args (env added to the harness's own),
// keeping the tail of its output for error messages. The caller must call
// Stop.
func StartProcess(name, bin string, args []string, env []string) (*Process, error) {
	return childproc.Start(name, bin, args, env, nil)
}

// ProcUsage is a snapshot of a process tree's resources.
type ProcUsage struct {
	// RSSKiB is VmRSS summed over the process and its direct children.
	RSSKiB int64
	// CPU is user plus system time, summed likewise.
	CPU time.Duration
}

// ReadUsage reads /proc for pid and its direct children (nginx's workers).
func ReadUsage(pid int) (ProcUsage, error) {
	pids := append([]int{pid}, children(pid)...)
	var u ProcUsage
	for i, id := range pids {
		rss, cpu, err := readOne(id)
		if err != nil {
			if i == 0 {
				return ProcUsage{}, err
			}
			continue // a child that just exited
		}
		u.RSSKiB += rss
		u.CPU += cpu
	}
	return u, nil
}

func readOne(pid int) (rssKiB int64, cpu time.Duration, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("parse stat of %d: %d fields", pid, len(f))
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	cpu = time.Duration(ut+st) * time.Second / clockTicks

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read status of %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return rssKiB, cpu, nil
}

// children lists the direct children of pid by scanning /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			id, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			out = append(out, id)
		}
	}
	return out
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for a child process that must be told its port up front.
func FreeAddr() (string, error) { return childproc.FreeAddr() }

// WaitReady calls probe every interval until it returns nil, the process
// exits, or timeout passes.
func WaitReady(ctx context.Context, p *Process, probe func(context.Context) error, interval, timeout time.Duration) error {
	return childproc.WaitReady(ctx, p, probe, interval, timeout)
}

// TCPProbe returns a probe that succeeds once addr accepts connections.
func TCPProbe(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}
