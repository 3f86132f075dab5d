package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestProcsFor: --max-procs is what serve sets, unless the environment
// has GOMAXPROCS (the runtime's own reading of it stands) or it is 0.
func TestProcsFor(t *testing.T) {
	for _, c := range []struct {
		n       int
		environ []string
		want    int
	}{
		{1, nil, 1},
		{3, []string{"PATH=/bin"}, 3},
		{0, nil, 0},
		{1, []string{"GOMAXPROCS=4"}, 0},
		{1, []string{"GOMAXPROCS="}, 0},
		{1, []string{"XGOMAXPROCS=4"}, 1},
	} {
		if got := procsFor(c.n, c.environ); got != c.want {
			t.Errorf("procsFor(%d, %q) = %d, want %d", c.n, c.environ, got, c.want)
		}
	}
}

// TestMaxProcs runs the binary (this test binary as main) on the embedded
// demo and reads the processors its start-up line reports: --max-procs's
// by default and when given, Go's own with 0, the environment's when
// GOMAXPROCS is set. The values differ from what the runtime picks by
// itself (NumCPU), so a binary that ignored the key would fail.
func TestMaxProcs(t *testing.T) {
	t.Parallel()
	other := runtime.NumCPU() + 1
	for _, c := range []struct {
		name string
		args []string
		env  string
		want int
	}{
		{"default", nil, "", 1},
		{"flag", []string{"--max-procs", strconv.Itoa(other)}, "", other},
		{"zero keeps Go's", []string{"--max-procs", "0"}, "", runtime.NumCPU()},
		{"environment wins", []string{"--max-procs", "1"}, "GOMAXPROCS=" + strconv.Itoa(other+1), other + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := processorsOfBinary(t, c.env, c.args...); got != c.want {
				t.Errorf("processors = %d, want %d", got, c.want)
			}
		})
	}
}

var processorsField = regexp.MustCompile(`"processors":(\d+)`)

// processorsOfBinary starts the binary with args (and env, when not
// empty, added to the environment), returns the processors its
// "skills-sidecar listening" line reports, and ends it.
func processorsOfBinary(t *testing.T, env string, args ...string) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--annotations-file", "", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill() // the process this test started, by its handle
		_ = cmd.Wait()
	}()
	found := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := processorsField.FindSubmatch(sc.Bytes()); m != nil {
				n, _ := strconv.Atoi(string(m[1]))
				found <- n
				break
			}
		}
		close(found)
		for sc.Scan() { // keep the pipe drained until the process ends
		}
	}()
	select {
	case n, ok := <-found:
		if !ok {
			t.Fatal("the binary ended without a start-up line naming its processors")
		}
		return n
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("no start-up line in a minute")
	}
	return 0
}
