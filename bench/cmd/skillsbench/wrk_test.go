package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestWrkTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	strace := write("strace.txt", `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 60.00    0.000600           1         3           futex
 40.00    0.000400           1         5           read
------ ----------- ----------- --------- --------- ------------------
100.00    0.001000           1         8           total
`)
	good := write("good", "call era=legacy c=1 target=nginx round=1 requests=10 seconds=1 p50_us=1 p99_us=1 errors=0 wrong=0 cpu_us=100 syscalls=20\n")
	bad := write("bad", "call era=legacy c=1 target=nginx round=1 requests=10\n")
	for _, c := range []struct {
		args  []string
		stdin string
		code  int
		out   string
	}{
		{args: nil, code: 2},
		{args: []string{"proc"}, code: 2},
		{args: []string{"walk", "x"}, code: 2},
		{args: []string{"proc", "-1"}, code: 1},
		{args: []string{"proc", "abc"}, code: 1},
		{args: []string{"strace", strace}, out: "calls=8 top=read:5,futex:3\n"},
		{args: []string{"strace", good}, code: 1},
		{args: []string{"gobench"}, stdin: "BenchmarkX-2 10 5 ns/op 0 B/op 7 allocs/op\n", out: "gobench name=BenchmarkX allocs=7\n"},
		{args: []string{"gobench"}, stdin: "PASS\n", code: 1},
		{args: []string{"report", good}, out: "| call | legacy | 1 | nginx | 10 (1 round) |"},
		{args: []string{"report", bad}, code: 1},
		{args: []string{"report", filepath.Join(dir, "missing")}, code: 1},
	} {
		var stdout, stderr strings.Builder
		code := wrkTool(c.args, strings.NewReader(c.stdin), &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.out) {
			t.Errorf("wrk %q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, stdout.String(), stderr.String(), c.code, c.out)
		}
	}
}

// TestWrkProc reads this test's own process: it has spent CPU, read files
// and been switched off a CPU by now, so every count is positive, and the
// keys come in the order scripts/bench-wrk.sh's records use.
func TestWrkProc(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	if code := wrkTool([]string{"proc", strconv.Itoa(os.Getpid())}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !regexp.MustCompile(`^cpu_us=[0-9]+ syscalls=[1-9][0-9]* switches=[1-9][0-9]*\n$`).MatchString(stdout.String()) {
		t.Errorf("stdout %q", stdout.String())
	}
}
