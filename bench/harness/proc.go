package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
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
	cpu, err = ParseStatCPU(stat)
	if err != nil {
		return 0, 0, fmt.Errorf("stat of %d: %w", pid, err)
	}
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

// maxProcFile bounds the /proc file the parsers below accept: a stat line
// is about 300 bytes and an io file about 200.
const maxProcFile = 4096

// maxStatusFile bounds a status file, about 1.5 KiB; its CPU and memory
// node masks grow with the machine, so it gets more room.
const maxStatusFile = 16 << 10

// ParseStatCPU returns user plus system time (utime + stime, all threads)
// from the bytes of /proc/PID/stat. The fields after the command name,
// which is in parentheses and may hold spaces and parentheses, are counted
// from its last ')': state is field 3, utime 14, stime 15.
func ParseStatCPU(stat []byte) (time.Duration, error) {
	if len(stat) > maxProcFile {
		return 0, fmt.Errorf("stat of %d bytes, more than %d", len(stat), maxProcFile)
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || bytes.IndexByte(stat, '(') < 0 {
		return 0, errors.New("no command name in parentheses")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(time.Second)/2 {
			return 0, fmt.Errorf("utime or stime %q is not a tick count", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// ParseIOSyscalls returns syscr + syscw from the bytes of /proc/PID/io: the
// read and write calls of the whole process that the kernel counts there
// (read, readv, pread, write, writev, sendfile, …). Socket calls that do
// not go through them (recvfrom, sendto, recvmsg, sendmsg) are not
// counted, nor is any other system call: no epoll_wait, futex, accept or
// close; the strace pass counts them all.
func ParseIOSyscalls(io []byte) (int64, error) {
	if len(io) > maxProcFile {
		return 0, fmt.Errorf("io of %d bytes, more than %d", len(io), maxProcFile)
	}
	var sum int64
	seen := 0
	for line := range strings.SplitSeq(string(io), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "syscr" && k != "syscw") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/2 {
			return 0, fmt.Errorf("%s %q is not a count", k, strings.TrimSpace(v))
		}
		sum += n
		seen++
	}
	if seen != 2 {
		return 0, fmt.Errorf("want syscr and syscw once each, found %d of them", seen)
	}
	return sum, nil
}

// ParseCtxtSwitches returns voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches from the bytes of a status file. Read from
// /proc/PID/task/TID/status they are that one thread's; /proc/PID/status
// gives the main thread's only, not the process's.
func ParseCtxtSwitches(status []byte) (voluntary, nonvoluntary int64, err error) {
	if len(status) > maxStatusFile {
		return 0, 0, fmt.Errorf("status of %d bytes, more than %d", len(status), maxStatusFile)
	}
	voluntary, nonvoluntary = -1, -1
	for line := range strings.SplitSeq(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		var dst *int64
		switch {
		case !ok:
			continue
		case k == "voluntary_ctxt_switches":
			dst = &voluntary
		case k == "nonvoluntary_ctxt_switches":
			dst = &nonvoluntary
		default:
			continue
		}
		if *dst >= 0 {
			return 0, 0, fmt.Errorf("%s twice", k)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/4 {
			return 0, 0, fmt.Errorf("%s %q is not a count", k, strings.TrimSpace(v))
		}
		*dst = n
	}
	if voluntary < 0 || nonvoluntary < 0 {
		return 0, 0, errors.New("want voluntary_ctxt_switches and nonvoluntary_ctxt_switches")
	}
	return voluntary, nonvoluntary, nil
}

// Counters are a process tree's cumulative CPU, read/write-family system
// calls and context switches.
type Counters struct {
	CPU      time.Duration
	Syscalls int64
	// Switches is voluntary plus involuntary context switches summed over
	// the threads alive when read. A thread that exited takes its count
	// with it (the kernel keeps it only for getrusage), so a difference of
	// two readings misses the switches of threads that ended between
	// them: little here, as a Go process keeps its threads and nginx runs
	// one long-lived worker, but a count can even go down.
	Switches int64
}

// ReadCounters sums Counters over pid and its direct children (nginx's
// workers under its master). A child that exits while it is read is left
// out, and so is a thread; pid itself must be readable.
func ReadCounters(pid int) (Counters, error) {
	var c Counters
	for i, id := range append([]int{pid}, children(pid)...) {
		one, err := readCounters(id)
		if err != nil {
			if i == 0 {
				return Counters{}, err
			}
			continue
		}
		c.CPU += one.CPU
		c.Syscalls += one.Syscalls
		c.Switches += one.Switches
	}
	return c, nil
}

func readCounters(pid int) (Counters, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Counters{}, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	cpu, err := ParseStatCPU(stat)
	if err != nil {
		return Counters{}, fmt.Errorf("stat of %d: %w", pid, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return Counters{}, fmt.Errorf("read io of %d: %w", pid, err)
	}
	n, err := ParseIOSyscalls(b)
	if err != nil {
		return Counters{}, fmt.Errorf("io of %d: %w", pid, err)
	}
	sw, err := readSwitches(pid)
	if err != nil {
		return Counters{}, err
	}
	return Counters{CPU: cpu, Syscalls: n, Switches: sw}, nil
}

// readSwitches sums the context switches of pid's threads. A thread that
// exits before its status is read is skipped.
func readSwitches(pid int) (int64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*/status", pid))
	if err != nil {
		return 0, err
	}
	var statuses [][]byte
	for _, p := range tasks {
		if b, err := os.ReadFile(p); err == nil {
			statuses = append(statuses, b)
		}
	}
	if len(statuses) == 0 {
		return 0, fmt.Errorf("no thread status readable under /proc/%d/task", pid)
	}
	n, err := sumSwitches(statuses)
	if err != nil {
		return 0, fmt.Errorf("a thread of %d: %w", pid, err)
	}
	return n, nil
}

// sumSwitches adds voluntary and involuntary context switches over the
// status files of threads; one that does not parse is an error.
func sumSwitches(statuses [][]byte) (int64, error) {
	var sum int64
	for _, b := range statuses {
		v, nv, err := ParseCtxtSwitches(b)
		if err != nil {
			return 0, err
		}
		sum += v + nv
	}
	return sum, nil
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
