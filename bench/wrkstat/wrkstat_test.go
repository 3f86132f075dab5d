package wrkstat

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// results is what the script writes for two rounds of legacy c=32 against
// nginx and the sidecar, one SSE round, a strace pass and a benchmark. The
// SSE sidecar run has no switches, as in a file written before they were
// recorded.
const results = `
call era=legacy c=32 target=nginx round=1 requests=3000 events=0 seconds=3.000 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=300000 syscalls=6000 switches=3000
call era=legacy c=32 target=sidecar round=1 requests=2700 events=0 seconds=3.000 p50_us=9500 p99_us=31000 errors=0 wrong=0 cpu_us=540000 syscalls=21600 mallocs=243000 switches=8100
call era=legacy c=32 target=nginx round=2 requests=3000 events=0 seconds=3.000 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=300000 syscalls=6000 switches=3600
call era=legacy c=32 target=sidecar round=2 requests=3000 events=0 seconds=3.000 p50_us=9500 p99_us=31000 errors=0 wrong=0 cpu_us=420000 syscalls=21000 mallocs=240000 switches=7500
sse era=modern c=1 target=nginx round=1 requests=100 events=5000 seconds=3 p50_us=900 p99_us=2000 errors=0 wrong=0 cpu_us=10000 syscalls=1000 switches=2500
sse era=modern c=1 target=sidecar round=1 requests=100 events=5000 seconds=3 p50_us=900 p99_us=2000 errors=0 wrong=0 cpu_us=11000 syscalls=1500 mallocs=20000
strace era=legacy c=32 target=nginx requests=1000 calls=6000 top=writev:2000,recvfrom:2000
strace era=legacy c=32 target=sidecar requests=1000 calls=7500 top=read:4000
gobench name=BenchmarkForward/tools-call/direct allocs=88
gobench name=BenchmarkForward/tools-call/sidecar allocs=110
`

func TestParseRecords(t *testing.T) {
	t.Parallel()
	rec, err := ParseRecords(strings.NewReader(results))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Runs) != 6 || len(rec.Straces) != 2 || len(rec.Benches) != 2 {
		t.Fatalf("got %d runs, %d straces, %d benches", len(rec.Runs), len(rec.Straces), len(rec.Benches))
	}
	want := Run{Kind: KindCall, Era: "legacy", Target: "sidecar", Conns: 32, Round: 1, Requests: 2700, Events: 2700,
		Seconds: 3, P50: 9500, P99: 31000, CPU: 540000, Syscalls: 21600, Mallocs: 243000, Switches: 8100, UpstreamCPU: -1, LoadCPU: -1}
	if d := cmp.Diff(want, rec.Runs[1]); d != "" {
		t.Errorf("run (-want +got):\n%s", d)
	}
	if rec.Runs[0].Mallocs != -1 {
		t.Errorf("nginx mallocs %v, want -1 (none)", rec.Runs[0].Mallocs)
	}
	if rec.Runs[5].Switches != -1 {
		t.Errorf("sse sidecar switches %v, want -1 (none)", rec.Runs[5].Switches)
	}
	if rec.Runs[4].Events != 5000 {
		t.Errorf("sse events %v", rec.Runs[4].Events)
	}
}

func TestParseRecordsRefusesBrokenLines(t *testing.T) {
	t.Parallel()
	good := "call era=legacy c=1 target=nginx round=1 requests=1 seconds=1 p50_us=1 p99_us=1 errors=0 wrong=0 cpu_us=1 syscalls=1"
	for name, line := range map[string]string{
		"unknown kind":          "walk era=legacy",
		"not key=value":         good + " oops",
		"empty key":             good + " =3",
		"duplicate":             good + " c=2",
		"missing field":         strings.Replace(good, " cpu_us=1", "", 1),
		"missing target":        strings.Replace(good, "target=nginx", "target=", 1),
		"negative":              strings.Replace(good, "syscalls=1", "syscalls=-1", 1),
		"not a number":          strings.Replace(good, "requests=1", "requests=many", 1),
		"NaN":                   strings.Replace(good, "requests=1", "requests=NaN", 1),
		"negative switches":     good + " switches=-3",
		"switches not a number": good + " switches=many",
		"switches empty":        good + " switches=",
		"huge":                  strings.Replace(good, "requests=1", "requests=1e300", 1),
		"zero seconds":          strings.Replace(good, "seconds=1", "seconds=0", 1),
		"tiny seconds":          strings.Replace(good, "seconds=1", "seconds=1e-310", 1),
		"tiny requests":         strings.Replace(good, "requests=1", "requests=1e-300", 1),
		"tiny cpu":              strings.Replace(good, "cpu_us=1", "cpu_us=0.0001", 1),
		"fractional round":      strings.Replace(good, "round=1", "round=1.5", 1),
		"sse no events":         strings.Replace(good, "call ", "sse ", 1),
		"line too long":         good + " x=" + strings.Repeat("9", MaxLine),
		"strace no calls":       "strace era=legacy c=1 target=nginx requests=3",
		"gobench no name":       "gobench allocs=3",
	} {
		if _, err := ParseRecords(strings.NewReader(good + "\n" + line + "\n")); err == nil {
			t.Errorf("%s: no error for %q", name, line)
		}
	}
	if _, err := ParseRecords(strings.NewReader(good)); err != nil {
		t.Errorf("the good line itself: %v", err)
	}
	// A number too small to divide by is refused by name: requests/seconds
	// or cpu_us/requests would overflow to Inf.
	for _, field := range []string{"seconds", "requests"} {
		line := strings.Replace(good, field+"=1", field+"=1e-310", 1)
		if _, err := ParseRecords(strings.NewReader(line)); err == nil || !strings.Contains(err.Error(), field+"=") {
			t.Errorf("%q: error %v, want one naming %s", line, err, field)
		}
	}
}

const straceOut = `strace: Process 15221 attached with 7 threads
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 44.48    0.002222          25        87         1 futex
 28.53    0.001425          14        99           nanosleep
  0.58    0.000029           1        22        11 read
  0.00    0.000000           0         1           rt_sigreturn
------ ----------- ----------- --------- --------- ------------------
100.00    0.004995          14       209        12 total
`

func TestParseStrace(t *testing.T) {
	t.Parallel()
	rows, total, err := ParseStrace([]byte(straceOut))
	if err != nil {
		t.Fatal(err)
	}
	want := []SyscallCount{{"futex", 87}, {"nanosleep", 99}, {"read", 22}, {"rt_sigreturn", 1}}
	if d := cmp.Diff(want, rows); d != "" || total != 209 {
		t.Errorf("total %d, rows (-want +got):\n%s", total, d)
	}
	for name, bad := range map[string]string{
		"empty":           "",
		"no total":        strings.Split(straceOut, "------ ----------- ----------- --------- --------- ------------------\n100")[0],
		"total disagrees": strings.Replace(straceOut, "209", "210", 1),
		"two totals":      straceOut + "100.00    0.004995          14       209        12 total\n",
		"line too long":   straceOut + strings.Repeat(" ", MaxLine+1),
	} {
		if _, _, err := ParseStrace([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

const goTestOut = `goos: linux
goarch: amd64
pkg: github.com/skills-sidecar/skills-sidecar/internal/proxy
BenchmarkForward/tools-call/direct-2         	    3000	     88123 ns/op	    7012 B/op	      88 allocs/op
BenchmarkForward/tools-call/sidecar-2        	    3000	    203456 ns/op	   15003 B/op	     179 allocs/op
BenchmarkOther-2        	    3000	    203456 ns/op
PASS
`

func TestParseGoBench(t *testing.T) {
	t.Parallel()
	got, err := ParseGoBench([]byte(goTestOut))
	if err != nil {
		t.Fatal(err)
	}
	want := []GoBench{{"BenchmarkForward/tools-call/direct", 88}, {"BenchmarkForward/tools-call/sidecar", 179}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if n, ok := benchHopAllocs(got); !ok || n != 91 {
		t.Errorf("hop allocs %v %v, want 91", n, ok)
	}
	if _, err := ParseGoBench([]byte("PASS\nBenchmarkOther-2   3000   203456 ns/op\n")); err == nil {
		t.Error("output without allocs/op (no -benchmem): no error")
	}
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s      Spread
		target float64
		atMost bool
		want   string
	}{
		{Spread{Median: 1.4, Min: 1.3, Max: 1.6, N: 3}, 1.5, true, Pass},
		{Spread{Median: 1.5, Min: 1.5, Max: 1.5, N: 3}, 1.5, true, Pass},
		{Spread{Median: 1.6, Min: 1.3, Max: 1.7, N: 3}, 1.5, true, WithinSpread},
		{Spread{Median: 2.0, Min: 1.9, Max: 2.1, N: 3}, 1.5, true, Miss},
		{Spread{Median: 0.95, Min: 0.9, Max: 1.05, N: 3}, 1, false, WithinSpread},
		{Spread{Median: 0.8, Min: 0.79, Max: 0.81, N: 3}, 1, false, Miss},
		{Spread{Median: 1.1, Min: 1.0, Max: 1.2, N: 3}, 1, false, Pass},
		{Spread{}, 1, false, NotMeasured},
	} {
		if got := Verdict(c.s, c.target, c.atMost); got != c.want {
			t.Errorf("Verdict(%+v, %v, %v) = %s, want %s", c.s, c.target, c.atMost, got, c.want)
		}
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	rec, err := ParseRecords(strings.NewReader(results))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Write(&b, rec); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		// CPU/request: sidecar 200 and 140 µs against nginx's 100: 2.0× and 1.4×.
		// Switches/request: 8100/2700 = 3.00 and 7500/3000 = 2.50.
		"| call | legacy | 32 | sidecar | 950 (900–1000) | – | 9500 (9500–9500) | 31000 (31000–31000) | 170.0 (140.0–200.0) | 7.50 (7.00–8.00) | 2.75 (2.50–3.00) | 85.0 (80.0–90.0) | 0 | 0 |",
		// nginx: 3000/3000 = 1.00 and 3600/3000 = 1.20 switches per request.
		"| call | legacy | 32 | nginx | 1000 (1000–1000) | – | 9000 (9000–9000) | 30000 (30000–30000) | 100.0 (100.0–100.0) | 2.00 (2.00–2.00) | 1.10 (1.00–1.20) | – | 0 | 0 |",
		// SSE over 5000 events in 3 s: nginx 2500 switches, 0.50 per event;
		// the sidecar's run recorded none.
		"| sse | modern | 1 | nginx | 33 (1 round) | 1667 (1 round) | 900 (1 round) | 2000 (1 round) | 2.0 (1 round) | 0.20 (1 round) | 0.50 (1 round) | – | 0 | 0 |",
		"| sse | modern | 1 | sidecar | 33 (1 round) | 1667 (1 round) | 900 (1 round) | 2000 (1 round) | 2.2 (1 round) | 0.30 (1 round) | – | 4.0 (1 round) | 0 | 0 |",
		// Against nginx, round by round: switches 3.00 − 1.00 = 2.00 and
		// 2.50 − 1.20 = 1.30; syscalls 8 − 2 = 6 and 7 − 2 = 5.
		"| call | legacy | 32 | 1.70× (1.40–2.00) | – | 0.95× (0.90–1.00) | – | 5.50 (5.00–6.00) | – | 1.65 (1.30–2.00) |",
		// SSE: 2.2/2.0 CPU, equal throughput, 0.30 − 0.20 syscalls, no switches pair.
		"| sse | modern | 1 | 1.10× (1 round) | – | 1.00× (1 round) | – | 0.10 (1 round) | – | – |",
		"| CPU per forwarded tools/call, legacy c=32, sidecar÷nginx | 1.70× (1.40–2.00) | ≤ 1.5× | WITHIN-SPREAD |",
		"| throughput, legacy c=32, sidecar÷nginx | 0.95× (0.90–1.00) | ≥ 1× | WITHIN-SPREAD |",
		"| all syscalls per request (strace -c), legacy c=32, sidecar−nginx | 1.50 (1 round) | ≤ +2 | PASS |",
		"| heap allocations per forwarded request (sidecar's go_memstats_mallocs_total), legacy c=32 | 85.0 (80.0–90.0) | ≤ 25 | MISS |",
		"| heap allocations per forwarded request (BenchmarkForward tools-call, sidecar − direct) | 22 (1 round) | ≤ 25 | PASS |",
		"| SSE: CPU per relayed event, modern c=1, sidecar÷nginx | 1.10× (1 round) | ≤ 1.2× | PASS |",
		"| legacy | 32 | nginx | 1000 | 6.00 | writev 2.00, recvfrom 2.00 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks\n%s\nin\n%s", want, out)
		}
	}
	// /proc/PID/io does not count recvfrom and sendto, the socket calls of
	// nginx and of the sidecar: no target is judged on it.
	if strings.Contains(out, "syscalls per request (/proc/PID/io)") {
		t.Errorf("a target row judged on /proc/PID/io's counts:\n%s", out)
	}
}

// TestWriteWithoutNginx: with nginx not installed the target rows say so
// instead of dividing by nothing.
func TestWriteWithoutNginx(t *testing.T) {
	t.Parallel()
	var kept []string
	for l := range strings.SplitSeq(results, "\n") {
		if !strings.Contains(l, "target=nginx") {
			kept = append(kept, l)
		}
	}
	rec, err := ParseRecords(strings.NewReader(strings.Join(kept, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Write(&b, rec); err != nil {
		t.Fatal(err)
	}
	if want := "| CPU per forwarded tools/call, legacy c=32, sidecar÷nginx | – | ≤ 1.5× | NOT MEASURED |"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}

func FuzzParseRecords(f *testing.F) {
	f.Add(results)
	f.Add("call era=x c=1 target=t round=1 requests=0 seconds=1 p50_us=0 p99_us=0 errors=0 wrong=0 cpu_us=0 syscalls=0")
	f.Add("call era=x c=1 target=t round=1 requests=1 seconds=1e-310 p50_us=0 p99_us=0 errors=0 wrong=0 cpu_us=0 syscalls=0")
	f.Add("call era=x c=1 target=t round=1 requests=1e-300 seconds=1 p50_us=0 p99_us=0 errors=0 wrong=0 cpu_us=1e12 syscalls=0")
	f.Fuzz(func(t *testing.T, s string) {
		rec, err := ParseRecords(strings.NewReader(s))
		if err != nil {
			return
		}
		var b strings.Builder
		if err := Write(&b, rec); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "NaN") || strings.Contains(b.String(), "Inf") {
			t.Errorf("NaN or Inf in the output of %q:\n%s", s, b.String())
		}
	})
}

func FuzzParseStrace(f *testing.F) {
	f.Add([]byte(straceOut))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, total, err := ParseStrace(b)
		if err != nil {
			return
		}
		var sum int64
		for _, r := range rows {
			if r.Calls < 0 || r.Name == "" {
				t.Errorf("row %+v", r)
			}
			sum += r.Calls
		}
		if sum != total {
			t.Errorf("rows sum to %d, total %d", sum, total)
		}
	})
}

func FuzzParseGoBench(f *testing.F) {
	f.Add([]byte(goTestOut))
	f.Fuzz(func(t *testing.T, b []byte) {
		bs, err := ParseGoBench(b)
		if err == nil && len(bs) == 0 {
			t.Error("no error and no benchmark")
		}
		for _, x := range bs {
			if x.Allocs < 0 || !strings.HasPrefix(x.Name, "Benchmark") {
				t.Errorf("bench %+v", x)
			}
		}
	})
}

// TestWriteServers: with the sidecar also run on net/http's server, the
// two servers are compared round by round; without it, no such table.
func TestWriteServers(t *testing.T) {
	t.Parallel()
	// net/http: 600 and 480 µs of CPU over 2700 and 3000 requests (222 and
	// 160 per request) against the default's 200 and 140: 0.90× and 0.875×.
	extra := `
call era=legacy c=32 target=sidecar-nethttp round=1 requests=2700 events=0 seconds=3.000 p50_us=9500 p99_us=31000 errors=0 wrong=0 cpu_us=600000 syscalls=27000 mallocs=270000 switches=10800
call era=legacy c=32 target=sidecar-nethttp round=2 requests=2400 events=0 seconds=3.000 p50_us=9500 p99_us=31000 errors=0 wrong=0 cpu_us=384000 syscalls=24000 mallocs=240000 switches=9600
`
	// Round 1: own 200 µs/op, net/http 222.2: 0.90×; 900 vs 900 req/s: 1.00×;
	// syscalls 8 − 10 = −2; allocs 90 − 100 = −10. Round 2: 140 vs 160:
	// 0.875×; 1000 vs 800 req/s: 1.25×; 7 − 10 = −3; 80 − 100 = −20.
	// net/http÷nginx: 222.2/100 = 2.22×, 160/100 = 1.60×. Switches:
	// net/http 10800/2700 = 9600/2400 = 4.00 per request against the
	// default's 3.00 and 2.50: −1.00 and −1.50.
	want := "| call | legacy | 32 | 0.89× (0.88–0.90) | 1.91× (1.60–2.22) | 1.12× (1.00–1.25) | -2.50 (-3.00–-2.00) | -15.0 (-20.0–-10.0) | -1.25 (-1.50–-1.00) |"
	if out := writeRecords(t, results+extra); !strings.Contains(out, want) {
		t.Errorf("output lacks\n%s\nin\n%s", want, out)
	}
	if out := writeRecords(t, results); strings.Contains(out, "two servers") {
		t.Errorf("a servers table without the net/http runs:\n%s", out)
	}
}

// TestWriteFloor: with the Go floor measured, it is set against nginx and
// the sidecar against it round by round; without it, no such table.
func TestWriteFloor(t *testing.T) {
	t.Parallel()
	// The floor: 300000 and 384000 µs of CPU over 2500 and 3200 requests
	// (120 per request in both), 5000 and 6400 r+w calls (2.00 per request),
	// 5000 and 3200 switches (2.00 and 1.00 per request). It has no
	// allocation counter and no SSE run.
	extra := `
call era=legacy c=32 target=floor round=1 requests=2500 events=0 seconds=2.500 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=300000 syscalls=5000 switches=5000
call era=legacy c=32 target=floor round=2 requests=3200 events=0 seconds=3.200 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=384000 syscalls=6400 switches=3200
`
	// floor÷nginx CPU: 120/100 = 1.20× both rounds. Throughput: the floor's
	// 1000 req/s in both against nginx's 1000: 1.00×.
	// sidecar÷floor CPU: 200/120 = 1.667× and 140/120 = 1.167×, median
	// their mean 1.417×; throughput
	// 900/1000 = 0.90× and 1000/1000 = 1.00×. Syscalls: the sidecar's 8 and
	// 7 per request less the floor's 2: 6 and 5. Switches: the sidecar's
	// 3.00 and 2.50 less 2.00 and 1.00: 1.00 and 1.50.
	out := writeRecords(t, results+extra)
	for _, want := range []string{
		"| kind | era | conns | CPU/op floor÷nginx | throughput floor÷nginx | CPU/op sidecar÷floor | throughput sidecar÷floor | r+w syscalls/op sidecar−floor | switches/op sidecar−floor |",
		"| call | legacy | 32 | 1.20× (1.20–1.20) | 1.00× (1.00–1.00) | 1.42× (1.17–1.67) | 0.95× (0.90–1.00) | 5.50 (5.00–6.00) | 1.25 (1.00–1.50) |",
		"| call | legacy | 32 | floor | 1000 (1000–1000) | – | 9000 (9000–9000) | 30000 (30000–30000) | 120.0 (120.0–120.0) | 2.00 (2.00–2.00) | 1.50 (1.00–2.00) | – | 0 | 0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks\n%s\nin\n%s", want, out)
		}
	}
	_, table, _ := strings.Cut(out, "Against the Go floor")
	table, _, _ = strings.Cut(table, "###")
	if strings.Contains(table, "| sse |") {
		t.Errorf("a floor row for a group it did not run in:\n%s", table)
	}
	if out := writeRecords(t, results); strings.Contains(out, "Go floor") {
		t.Errorf("a floor table without floor runs:\n%s", out)
	}
}

// TestWriteBudget: with the upstream's and wrk's CPU recorded, the table of
// where the CPU went per call adds the three processes up and sets the
// totals' ratio beside the throughput's; without them it is not printed.
func TestWriteBudget(t *testing.T) {
	t.Parallel()
	// Round 1: nginx 100 + 600 + 100 = 800 µs per call over 3000 calls;
	// the sidecar 150 + 600 + 100 = 850 over 2700. Round 2: nginx 90 + 550
	// + 80 = 720, the sidecar 130 + 550 + 80 = 760, 3000 calls each.
	// Totals nginx÷sidecar: 800/850 = 0.941 and 720/760 = 0.947, median
	// 0.944; throughput 0.90 and 1.00.
	budget := `
call era=modern c=32 target=nginx round=1 requests=3000 events=0 seconds=3.000 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=300000 syscalls=6000 up_cpu_us=1800000 load_cpu_us=300000
call era=modern c=32 target=sidecar round=1 requests=2700 events=0 seconds=3.000 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=405000 syscalls=6000 up_cpu_us=1620000 load_cpu_us=270000
call era=modern c=32 target=nginx round=2 requests=3000 events=0 seconds=3.000 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=270000 syscalls=6000 up_cpu_us=1650000 load_cpu_us=240000
call era=modern c=32 target=sidecar round=2 requests=3000 events=0 seconds=3.000 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=390000 syscalls=6000 up_cpu_us=1650000 load_cpu_us=240000
`
	rec, err := ParseRecords(strings.NewReader(results + budget))
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Runs[len(rec.Runs)-1]; r.UpstreamCPU != 1650000 || r.LoadCPU != 240000 {
		t.Errorf("parsed upstream %v and wrk %v CPU, want 1650000 and 240000", r.UpstreamCPU, r.LoadCPU)
	}
	if rec.Runs[0].UpstreamCPU != -1 || rec.Runs[0].LoadCPU != -1 {
		t.Errorf("a run without them parsed upstream %v and wrk %v, want -1 (none)", rec.Runs[0].UpstreamCPU, rec.Runs[0].LoadCPU)
	}
	var b strings.Builder
	if err := Write(&b, rec); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := "| modern | 32 | 95.0 / 140.0 | 575.0 / 575.0 | 90.0 / 90.0 | 760.0 / 805.0 | 0.94× (0.94–0.95) | 0.95× (0.90–1.00) |"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks\n%s\nin\n%s", want, out)
	}
	_, table, _ := strings.Cut(out, "Where the CPU went")
	table, _, _ = strings.Cut(table, "###")
	if strings.Contains(table, "| legacy |") {
		t.Errorf("a budget row for a group without the upstream's CPU:\n%s", table)
	}
	plain := "call era=modern c=32 target=nginx round=1 requests=3 seconds=3 p50_us=1 p99_us=1 errors=0 wrong=0 cpu_us=3 syscalls=6"
	if _, err := ParseRecords(strings.NewReader(plain + " up_cpu_us=6 load_cpu_us=3")); err != nil {
		t.Errorf("a good run: %v", err)
	}
	for _, bad := range []string{" up_cpu_us=-1", " load_cpu_us=x", " up_cpu_us="} {
		line := plain + bad
		if _, err := ParseRecords(strings.NewReader(line)); err == nil {
			t.Errorf("no error for a run ending %q", bad)
		}
	}
}

// TestWriteBusyFloor: with the busy floor's runs, a table sets the sidecar
// against it round by round; without them there is none.
func TestWriteBusyFloor(t *testing.T) {
	t.Parallel()
	// The floor: 120 µs per request (as in TestWriteFloor). The busy
	// floor: round 1 3000 requests in 3 s (1000/s) at 750000 µs (250 per
	// request), round 2 2500 in 2.5 s (1000/s) at 350000 (140), its
	// upstream 600 µs per request in both. Against the sidecar of results
	// (200 and 140 µs; 900 and 1000 req/s) and nginx (1000 req/s): CPU
	// sidecar÷busy 200/250 = 0.80 and 140/140 = 1.00, median 0.90;
	// throughput sidecar÷busy 0.90 and 1.00, busy÷nginx 1.00 and 1.00,
	// sidecar÷nginx 0.90 and 1.00. Hop medians: floor 120, busy
	// (250+140)/2 = 195, sidecar (200+140)/2 = 170; the sidecar's upstream
	// was not recorded.
	busy := `
call era=legacy c=32 target=floor round=1 requests=2500 events=0 seconds=2.500 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=300000 syscalls=5000
call era=legacy c=32 target=floor round=2 requests=3200 events=0 seconds=3.200 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=384000 syscalls=6400
call era=legacy c=32 target=floor-busy round=1 requests=3000 events=0 seconds=3.000 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=750000 syscalls=6000 up_cpu_us=1800000 load_cpu_us=300000
call era=legacy c=32 target=floor-busy round=2 requests=2500 events=0 seconds=2.500 p50_us=9000 p99_us=30000 errors=0 wrong=0 cpu_us=350000 syscalls=5000 up_cpu_us=1500000 load_cpu_us=250000
`
	out := writeRecords(t, results+busy)
	want := "| legacy | 32 | 120.0 / 195.0 / 170.0 | 600.0 / – | 0.90× (0.80–1.00) | 0.95× (0.90–1.00) | 1.00× (1.00–1.00) | 0.95× (0.90–1.00) |"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks\n%s\nin\n%s", want, out)
	}
	if out := writeRecords(t, results); strings.Contains(out, "FLOOR_BUSY") {
		t.Errorf("a busy-floor table without busy-floor runs:\n%s", out)
	}
}

// writeRecords parses a results file's text and renders every table.
func writeRecords(t *testing.T, s string) string {
	t.Helper()
	rec, err := ParseRecords(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Write(&b, rec); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
