package harness

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A real stat line (Linux 6.x), command name with a space and a ')'.
const statLine = "4242 (nginx: a) b) S 1 4242 4242 0 -1 4194624 1200 0 0 0 " +
	"250 70 0 0 20 0 1 0 123456 11111111 2222 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	got, err := ParseStatCPU([]byte(statLine))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3200 * time.Millisecond; got != want { // (250 + 70) ticks of 10 ms
		t.Errorf("got %v, want %v", got, want)
	}
	for name, bad := range map[string]string{
		"empty":              "",
		"no parentheses":     "4242 nginx S 1 2 3",
		"cut after utime":    "4242 (x) S 1 4242 4242 0 -1 4194624 1200 0 0 0 250",
		"utime not a number": strings.Replace(statLine, " 250 ", " 2x0 ", 1),
		"negative stime":     strings.Replace(statLine, " 70 ", " -70 ", 1),
		"too long":           statLine + strings.Repeat(" 0", maxProcFile),
	} {
		if _, err := ParseStatCPU([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

const ioFile = "rchar: 9775\nwchar: 3340\nsyscr: 56\nsyscw: 13\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n"

func TestParseIOSyscalls(t *testing.T) {
	t.Parallel()
	got, err := ParseIOSyscalls([]byte(ioFile))
	if err != nil {
		t.Fatal(err)
	}
	if got != 69 {
		t.Errorf("got %d, want 56 + 13", got)
	}
	for name, bad := range map[string]string{
		"empty":        "",
		"no syscw":     "syscr: 56\n",
		"twice syscr":  "syscr: 1\nsyscr: 2\nsyscw: 3\n",
		"not a number": strings.Replace(ioFile, "syscw: 13", "syscw: many", 1),
		"negative":     strings.Replace(ioFile, "syscr: 56", "syscr: -56", 1),
	} {
		if _, err := ParseIOSyscalls([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// statusFile is the example of /proc/PID/status in proc(5) (man-pages
// 6.03), tabs and spaces as printed there.
const statusFile = `Name:   bash
Umask:  0022
State:  S (sleeping)
Tgid:   17248
Ngid:   0
Pid:    17248
PPid:   17200
TracerPid:      0
Uid:    1000    1000    1000    1000
Gid:    100     100     100     100
FDSize: 256
Groups: 16 33 100
NStgid: 17248
NSpid:  17248
NSpgid: 17248
NSsid:  17200
VmPeak:	  131168 kB
VmSize:	  131168 kB
VmLck:	       0 kB
VmPin:	       0 kB
VmHWM:	   13484 kB
VmRSS:	   13484 kB
RssAnon:	   10264 kB
RssFile:	    3220 kB
RssShmem:	       0 kB
VmData:	   10332 kB
VmStk:	     136 kB
VmExe:	     992 kB
VmLib:	    2104 kB
VmPTE:	      76 kB
VmPMD:	      12 kB
VmSwap:	       0 kB
HugetlbPages:          0 kB
CoreDumping:	0
Threads:        1
SigQ:   0/3067
SigPnd: 0000000000000000
ShdPnd: 0000000000000000
SigBlk: 0000000000010000
SigIgn: 0000000000384004
SigCgt: 000000004b813efb
CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: ffffffffffffffff
CapAmb:	0000000000000000
NoNewPrivs:     0
Seccomp:        0
Speculation_Store_Bypass:       vulnerable
Cpus_allowed:   00000001
Cpus_allowed_list:      0
Mems_allowed:   1
Mems_allowed_list:      0
voluntary_ctxt_switches:        150
nonvoluntary_ctxt_switches:     545
`

func TestParseCtxtSwitches(t *testing.T) {
	t.Parallel()
	v, nv, err := ParseCtxtSwitches([]byte(statusFile))
	if err != nil {
		t.Fatal(err)
	}
	if v != 150 || nv != 545 {
		t.Errorf("got %d and %d, want 150 and 545", v, nv)
	}
	// Two threads: (150 + 545) + (7 + 3).
	other := strings.Replace(strings.Replace(statusFile, "        150", "        7", 1), ":     545", ":     3", 1)
	if n, err := sumSwitches([][]byte{[]byte(statusFile), []byte(other)}); err != nil || n != 705 {
		t.Errorf("two threads: %d, %v; want 705", n, err)
	}
	if _, err := sumSwitches([][]byte{[]byte(statusFile), []byte(ioFile)}); err == nil {
		t.Error("a thread's status without the counts: no error")
	}
	for name, bad := range map[string]string{
		"empty":             "",
		"no involuntary":    strings.Replace(statusFile, "nonvoluntary_ctxt_switches:     545\n", "", 1),
		"no voluntary":      strings.Replace(statusFile, "\nvoluntary_ctxt_switches:        150", "", 1),
		"voluntary twice":   statusFile + "voluntary_ctxt_switches:        1\n",
		"not a number":      strings.Replace(statusFile, ":     545", ":     many", 1),
		"negative":          strings.Replace(statusFile, "        150", "        -150", 1),
		"empty value":       strings.Replace(statusFile, "        150", "", 1),
		"too long":          statusFile + strings.Repeat("x", maxStatusFile),
		"io file":           ioFile,
		"prefix, other key": strings.Replace(statusFile, "\nvoluntary_ctxt", "\ninvoluntary_ctxt", 1),
	} {
		if bad == statusFile {
			t.Fatalf("%s: the case changed nothing", name)
		}
		if _, _, err := ParseCtxtSwitches([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestReadCounters reads this test's own process, which has run code and
// read files by now.
func TestReadCounters(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/self/io on this system")
	}
	c, err := ReadCounters(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if c.Syscalls <= 0 || c.CPU < 0 || c.Switches <= 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestReadCountersSwitchesOfEveryThread: a goroutine locked to a thread
// other than the main one sleeps n times, each a switch of that thread
// off its CPU. The sum over the threads must grow by about that much more
// than the main thread's own count (all /proc/PID/status shows) did.
func TestReadCountersSwitchesOfEveryThread(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc/self/task on this system")
	}
	const n = 200
	mainBefore := mainThreadSwitches(t)
	before, err := ReadCounters(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	onOtherThread(func() {
		for range n {
			time.Sleep(100 * time.Microsecond)
		}
	})
	after, err := ReadCounters(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	mainGrew := mainThreadSwitches(t) - mainBefore
	if d := after.Switches - before.Switches; d-mainGrew < n/2 {
		t.Errorf("switches grew by %d, the main thread's by %d, over %d sleeps of another thread", d, mainGrew, n)
	}
}

func mainThreadSwitches(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	v, nv, err := ParseCtxtSwitches(b)
	if err != nil {
		t.Fatal(err)
	}
	return v + nv
}

// onOtherThread runs f in a goroutine locked to a thread that is not the
// process's main one: if the first goroutine lands on the main thread, it
// holds it, locked, while a second one runs f elsewhere.
func onOtherThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if syscall.Gettid() != os.Getpid() {
			f()
			return
		}
		inner := make(chan struct{})
		go func() {
			defer close(inner)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			f()
		}()
		<-inner
	}()
	<-done
}

func FuzzParseProc(f *testing.F) {
	f.Add([]byte(statLine))
	f.Add([]byte(ioFile))
	f.Add([]byte(statusFile))
	f.Add([]byte("1 (a) S" + strings.Repeat(" 9223372036854775807", 20)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := ParseStatCPU(b); err == nil && d < 0 {
			t.Errorf("negative CPU %v from %q", d, b)
		}
		if n, err := ParseIOSyscalls(b); err == nil && n < 0 {
			t.Errorf("negative count %d from %q", n, b)
		}
		if v, nv, err := ParseCtxtSwitches(b); err == nil && (v < 0 || nv < 0 || v+nv < 0) {
			t.Errorf("counts %d and %d from %q", v, nv, b)
		}
	})
}
