package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/bench/harness"
	"github.com/skills-sidecar/skills-sidecar/bench/wrkstat"
)

// wrkUsage is the usage of the helpers scripts/bench-wrk.sh calls.
const wrkUsage = `usage: skillsbench wrk proc PID       print cpu_us=N syscalls=N switches=N of PID and its direct children
       skillsbench wrk strace FILE    print calls=N top=NAME:N,… from a strace -c summary
       skillsbench wrk gobench        read go test -bench -benchmem output on stdin, print gobench records
       skillsbench wrk report FILE    print the tables of a bench-wrk.sh results file`

// maxInput bounds a file or stdin the wrk helpers read.
const maxInput = 8 << 20

// wrkTool runs one of the helpers scripts/bench-wrk.sh calls.
func wrkTool(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "gobench" && len(args) != 2) {
		fmt.Fprintln(stderr, wrkUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "proc":
		err = wrkProc(args[1], stdout)
	case "strace":
		err = wrkStrace(args[1], stdout)
	case "gobench":
		err = wrkGoBench(stdin, stdout)
	case "report":
		err = wrkReport(args[1], stdout)
	default:
		fmt.Fprintln(stderr, wrkUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "skillsbench wrk %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func wrkProc(arg string, stdout io.Writer) error {
	pid, err := strconv.Atoi(arg)
	if err != nil || pid <= 0 {
		return fmt.Errorf("pid %q is not a process id", arg)
	}
	c, err := harness.ReadCounters(pid)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "cpu_us=%d syscalls=%d switches=%d\n", c.CPU.Microseconds(), c.Syscalls, c.Switches)
	return err
}

// straceTop is how many system calls, the most called first, the strace
// record names.
const straceTop = 6

func wrkStrace(path string, stdout io.Writer) error {
	b, err := readBounded(path, nil)
	if err != nil {
		return err
	}
	rows, total, err := wrkstat.ParseStrace(b)
	if err != nil {
		return err
	}
	slices.SortStableFunc(rows, func(a, b wrkstat.SyscallCount) int { return cmp.Compare(b.Calls, a.Calls) })
	var top []string
	for _, r := range rows[:min(len(rows), straceTop)] {
		top = append(top, fmt.Sprintf("%s:%d", r.Name, r.Calls))
	}
	_, err = fmt.Fprintf(stdout, "calls=%d top=%s\n", total, strings.Join(top, ","))
	return err
}

func wrkGoBench(stdin io.Reader, stdout io.Writer) error {
	b, err := readBounded("", stdin)
	if err != nil {
		return err
	}
	bs, err := wrkstat.ParseGoBench(b)
	if err != nil {
		return err
	}
	for _, x := range bs {
		fmt.Fprintf(stdout, "%s name=%s allocs=%g\n", wrkstat.KindGoBench, x.Name, x.Allocs)
	}
	return nil
}

func wrkReport(path string, stdout io.Writer) error {
	b, err := readBounded(path, nil)
	if err != nil {
		return err
	}
	rec, err := wrkstat.ParseRecords(strings.NewReader(string(b)))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return wrkstat.Write(stdout, rec)
}

// readBounded reads path (or r when path is "") up to maxInput bytes.
func readBounded(path string, r io.Reader) ([]byte, error) {
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("more than %d bytes", maxInput)
	}
	return b, nil
}
