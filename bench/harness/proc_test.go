package harness

import (
	"os"
	"strings"
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
	if c.Syscalls <= 0 || c.CPU < 0 {
		t.Errorf("counters %+v", c)
	}
}

func FuzzParseProc(f *testing.F) {
	f.Add([]byte(statLine))
	f.Add([]byte(ioFile))
	f.Add([]byte("1 (a) S" + strings.Repeat(" 9223372036854775807", 20)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := ParseStatCPU(b); err == nil && d < 0 {
			t.Errorf("negative CPU %v from %q", d, b)
		}
		if n, err := ParseIOSyscalls(b); err == nil && n < 0 {
			t.Errorf("negative count %d from %q", n, b)
		}
	})
}
