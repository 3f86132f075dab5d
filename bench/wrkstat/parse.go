package wrkstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Limits of what the parsers accept. The script writes a few hundred
// records of about 200 bytes; strace's summary has one line per system
// call name; go test prints a handful of benchmark lines.
const (
	// MaxLine is the longest record or line accepted, in bytes.
	MaxLine = 4096
	// MaxRecords is the most records (or lines of a summary) accepted.
	MaxRecords = 100_000
	// maxCount bounds every number, far above any real count, so sums
	// over MaxRecords cannot overflow a float's exact integers.
	maxCount = 1e12
	// minFigure is the smallest number other than 0 accepted: the
	// script's finest resolution (seconds to three decimals). With every
	// number 0 or within [minFigure, maxCount], every figure derived from
	// them (a rate, a count per operation, their ratios) is finite.
	minFigure = 1e-3
)

// Kinds of record.
const (
	// KindCall is one wrk run of tools/call against one target.
	KindCall = "call"
	// KindSSE is one wrk run of a progress call whose reply streams
	// events, against one target.
	KindSSE = "sse"
	// KindStrace is one `strace -c -f` pass over one target.
	KindStrace = "strace"
	// KindGoBench is one benchmark line of `go test -bench -benchmem`.
	KindGoBench = "gobench"
)

// Run is one timed wrk run against one target (a "call" or "sse" record).
type Run struct {
	Kind, Era, Target string
	Conns, Round      int
	// Requests is the replies wrk counted; Events, for "sse", the
	// streamed events they carried (for "call", equal to Requests).
	Requests, Events float64
	// Seconds is how long wrk ran.
	Seconds float64
	// P50 and P99 are wrk's latency percentiles in microseconds.
	P50, P99 float64
	// Errors are wrk's socket errors and timeouts; Wrong the replies that
	// were not HTTP 200 with the expected JSON-RPC result.
	Errors, Wrong float64
	// CPU is the target process tree's user+system CPU over the run, in
	// microseconds; Syscalls its read/write-family system calls (syscr +
	// syscw from /proc/PID/io).
	CPU, Syscalls float64
	// Mallocs is the target's heap allocations over the run, or -1 when
	// it exposes no allocation counter.
	Mallocs float64
	// Switches is the context switches of the target's threads over the
	// run (voluntary + involuntary, /proc/PID/task/*/status), or -1 in a
	// results file written before they were recorded.
	Switches float64
	// UpstreamCPU is the user+system CPU of the upstream's process behind
	// the target over the run, and LoadCPU wrk's own, in microseconds; -1
	// when not recorded (the upstream itself as the target has none).
	UpstreamCPU, LoadCPU float64
}

// Strace is one `strace -c -f` pass: all system calls of the target
// process tree while wrk sent Requests.
type Strace struct {
	Era, Target string
	Conns       int
	Requests    float64
	// Calls is strace's total; Top the busiest system calls as
	// "name:count,…", as the script recorded them.
	Calls float64
	Top   string
}

// GoBench is one benchmark's allocations per operation.
type GoBench struct {
	Name   string
	Allocs float64
}

// Records are the parsed contents of a results file.
type Records struct {
	Runs    []Run
	Straces []Strace
	Benches []GoBench
}

// ParseRecords reads the results file the script writes: one record per
// line, a kind and then space-separated key=value fields. Blank lines are
// skipped; anything else malformed is an error naming its line.
func ParseRecords(r io.Reader) (Records, error) {
	var out Records
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		if n > MaxRecords {
			return Records{}, fmt.Errorf("more than %d lines", MaxRecords)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if err := out.add(line); err != nil {
			return Records{}, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Records{}, fmt.Errorf("line %d: %w", n+1, err)
	}
	return out, nil
}

func (out *Records) add(line string) error {
	words := strings.Fields(line)
	f := &fields{m: map[string]string{}}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return fmt.Errorf("field %q is not key=value", w)
		}
		if _, dup := f.m[k]; dup {
			return fmt.Errorf("field %q twice", k)
		}
		f.m[k] = v
	}
	switch words[0] {
	case KindCall, KindSSE:
		run := Run{Kind: words[0], Era: f.word("era"), Target: f.word("target"),
			Conns: f.int("c"), Round: f.int("round"),
			Requests: f.num("requests"), Seconds: f.num("seconds"),
			P50: f.num("p50_us"), P99: f.num("p99_us"),
			Errors: f.num("errors"), Wrong: f.num("wrong"),
			CPU: f.num("cpu_us"), Syscalls: f.num("syscalls"), Mallocs: -1, Switches: -1, UpstreamCPU: -1, LoadCPU: -1}
		run.Events = run.Requests
		if run.Kind == KindSSE {
			run.Events = f.num("events")
		}
		if _, ok := f.m["mallocs"]; ok {
			run.Mallocs = f.num("mallocs")
		}
		if _, ok := f.m["switches"]; ok {
			run.Switches = f.num("switches")
		}
		if _, ok := f.m["up_cpu_us"]; ok {
			run.UpstreamCPU = f.num("up_cpu_us")
		}
		if _, ok := f.m["load_cpu_us"]; ok {
			run.LoadCPU = f.num("load_cpu_us")
		}
		if run.Seconds <= 0 {
			f.fail(errors.New("seconds must be positive"))
		}
		out.Runs = append(out.Runs, run)
	case KindStrace:
		out.Straces = append(out.Straces, Strace{Era: f.word("era"), Target: f.word("target"), Conns: f.int("c"),
			Requests: f.num("requests"), Calls: f.num("calls"), Top: f.m["top"]})
	case KindGoBench:
		out.Benches = append(out.Benches, GoBench{Name: f.word("name"), Allocs: f.num("allocs")})
	default:
		return fmt.Errorf("unknown kind %q", words[0])
	}
	return f.err
}

// fields are one record's key=value pairs; the first error a getter
// meets sticks in err.
type fields struct {
	m   map[string]string
	err error
}

func (f *fields) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

func (f *fields) word(k string) string {
	v := f.m[k]
	if v == "" {
		f.fail(fmt.Errorf("no %s", k))
	}
	return v
}

func (f *fields) num(k string) float64 {
	v, ok := f.m[k]
	if !ok {
		f.fail(fmt.Errorf("no %s", k))
		return 0
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > maxCount || x > 0 && x < minFigure {
		f.fail(fmt.Errorf("%s=%q is not 0 or a number from %g to %g", k, v, minFigure, maxCount))
		return 0
	}
	return x
}

func (f *fields) int(k string) int {
	x := f.num(k)
	if x != math.Trunc(x) || x > 1<<20 {
		f.fail(fmt.Errorf("%s=%q is not a small whole number", k, f.m[k]))
		return 0
	}
	return int(x)
}

// straceRow matches a row of `strace -c`, the total its last one: "100.00 0.004995 14 352
// 17 total", the errors column empty when there were none.
var straceRow = regexp.MustCompile(`^\s*[0-9.]+\s+[0-9.]+\s+[0-9]+\s+([0-9]+)\s+(?:[0-9]+\s+)?([a-z_0-9]+)\s*$`)

// SyscallCount is one row of strace's summary.
type SyscallCount struct {
	Name  string
	Calls int64
}

// ParseStrace reads the summary `strace -c` writes: the rows by system
// call, busiest first as strace sorts them, and the total. Lines that are
// not rows of the table (its header, rulers, "attached" notices) are
// skipped; a summary without a total is an error.
func ParseStrace(b []byte) (rows []SyscallCount, total int64, err error) {
	total = -1
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > MaxRecords {
		return nil, 0, fmt.Errorf("more than %d lines", MaxRecords)
	}
	for _, l := range lines {
		if len(l) > MaxLine {
			return nil, 0, fmt.Errorf("a line of %d bytes, more than %d", len(l), MaxLine)
		}
		m := straceRow.FindSubmatch(l)
		if m == nil {
			continue
		}
		n, err := strconv.ParseInt(string(m[1]), 10, 64)
		if err != nil || n > maxCount {
			return nil, 0, fmt.Errorf("calls %q is not a count", m[1])
		}
		if string(m[2]) == "total" {
			if total >= 0 {
				return nil, 0, errors.New("two totals")
			}
			total = n
			continue
		}
		rows = append(rows, SyscallCount{Name: string(m[2]), Calls: n})
	}
	if total < 0 {
		return nil, 0, errors.New("no total line: not the summary of strace -c")
	}
	var sum int64
	for _, r := range rows {
		sum += r.Calls
	}
	if sum != total {
		return nil, 0, fmt.Errorf("rows sum to %d, total says %d", sum, total)
	}
	return rows, total, nil
}

// benchLine matches a `go test -bench -benchmem` result line:
// "BenchmarkForward/tools-call/sidecar-2  2000  123 ns/op  456 B/op  78 allocs/op".
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s.*?\s([0-9.]+) allocs/op`)

// ParseGoBench reads go test's output and returns the allocations per
// operation of every benchmark line that reports them (-benchmem), in
// order, the GOMAXPROCS suffix cut from the name. Other lines are skipped;
// output with no such line is an error.
func ParseGoBench(b []byte) ([]GoBench, error) {
	var out []GoBench
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > MaxRecords {
		return nil, fmt.Errorf("more than %d lines", MaxRecords)
	}
	for _, l := range lines {
		if len(l) > MaxLine {
			return nil, fmt.Errorf("a line of %d bytes, more than %d", len(l), MaxLine)
		}
		m := benchLine.FindSubmatch(l)
		if m == nil {
			continue
		}
		x, err := strconv.ParseFloat(string(m[2]), 64)
		if err != nil || x > maxCount {
			return nil, fmt.Errorf("allocs/op %q is not a count", m[2])
		}
		out = append(out, GoBench{Name: string(m[1]), Allocs: x})
	}
	if len(out) == 0 {
		return nil, errors.New("no benchmark line with allocs/op (was -benchmem given?)")
	}
	return out, nil
}
