// Command skillsbench measures the skills-sidecar against a go-sdk upstream
// directly, a bare httputil.ReverseProxy, nginx and the sidecar itself, on
// loopback, and prints one table of throughput, latency and cost.
//
// Usage:
//
//	go run ./bench/cmd/skillsbench [-short] [-json FILE] [-scenarios a,b] [-repeats N] [-duration D]
//
// The subcommands `upstream`, `firstpage-upstream` and `bareproxy` are the
// harness's own servers; `wrk-upstream` is the upstream scripts/bench-wrk.sh
// measures against (`modernonly-upstream` the modern-only one of its
// sealed-session path) and `wrk` the helpers it reads /proc, strace's summary
// and go test's output with and prints its tables with; it starts them itself, and `stdio-upstream` serves
// the echo tool over stdin and stdout for the stdio scenario. `loopproxy` is a minimal relay without net/http's
// server, and `floorproxy` one without net/http at all on the sidecar's raw sockets (the floor for a Go hop),
// that scripts/bench-wrk.sh measures beside it; `floorproxy -busy D` is that floor spinning D of CPU per
// request, the control for what a hop's CPU alone does to throughput. `nginx-config` prints the nginx configuration the
// harness runs nginx with, for measurements made outside it
// (scripts/bench-wrk.sh).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/skills-sidecar/skills-sidecar/bench/harness"
	"github.com/skills-sidecar/skills-sidecar/bench/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "upstream" || args[0] == "wrk-upstream" || args[0] == "modernonly-upstream" || args[0] == "bareproxy" || args[0] == "loopproxy" || args[0] == "floorproxy" || args[0] == "firstpage-upstream") {
		return serve(ctx, args[0], args[1:], stderr)
	}
	if len(args) > 0 && args[0] == harness.StdioUpstreamCommand {
		if err := harness.ServeStdioUpstream(ctx); err != nil {
			fmt.Fprintf(stderr, "skillsbench %s: %v\n", args[0], err)
			return 1
		}
		return 0
	}
	if len(args) > 0 && args[0] == "wrk" {
		return wrkTool(args[1:], os.Stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "nginx-config" {
		return nginxConfig(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("skillsbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		short     = fs.Bool("short", false, "CI mode: 1s measurements, one repeat, smaller counts")
		jsonOut   = fs.String("json", "", "also write the results as JSON to `FILE`")
		scenarios = fs.String("scenarios", "", "comma-separated scenarios to run (default all): "+strings.Join(harness.ScenarioNames(), ","))
		duration  = fs.Duration("duration", 0, "measured time per target and repeat (default 5s, 1s with -short)")
		warmup    = fs.Duration("warmup", 0, "warm-up before each measurement (default 1s, 200ms with -short)")
		repeats   = fs.Int("repeats", 0, "interleaved repeats per measurement; the median is reported (default 3, 1 with -short)")
		maxSamp   = fs.Int("max-samples", 2_000_000, "upper bound on samples per measurement")
		sidecar   = fs.String("sidecar", "", "use this prebuilt skills-sidecar binary instead of building ./cmd/skills-sidecar")
		quiet     = fs.Bool("q", false, "no progress lines on stderr")
		strict    = fs.Bool("strict", false, "exit 3 when the sidecar is unavailable or any row failed (nginx may be missing)")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts, err := options(*short, *duration, *warmup, *repeats, *maxSamp, *sidecar)
	if err != nil {
		fmt.Fprintf(stderr, "skillsbench: %v\n", err)
		return 2
	}
	names, err := scenarioList(*scenarios)
	if err != nil {
		fmt.Fprintf(stderr, "skillsbench: %v\n", err)
		return 2
	}
	if !*quiet {
		opts.Log = stderr
	}
	env, err := harness.Setup(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "skillsbench: %v\n", err)
		return 1
	}
	rows := env.Run(ctx, names)
	env.Close()

	rep := report.Report{
		Machine: machine(),
		Settings: report.Settings{Short: opts.Short, DurationSec: opts.Duration.Seconds(),
			WarmupSec: opts.Warmup.Seconds(), Repeats: opts.Repeats, MaxSamples: opts.MaxSamples},
		Rows: rows,
	}
	rep.Ratios = report.Ratios(rows)
	fmt.Fprintf(stdout, "%d CPUs, %s, %s; %gs per measurement, median of %d interleaved repeats\n\n",
		rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.GoVer, rep.Settings.DurationSec, rep.Settings.Repeats)
	if err := report.WriteTable(stdout, rep); err != nil {
		fmt.Fprintf(stderr, "skillsbench: %v\n", err)
		return 1
	}
	if *jsonOut != "" {
		if err := writeJSON(*jsonOut, rep); err != nil {
			fmt.Fprintf(stderr, "skillsbench: %v\n", err)
			return 1
		}
	}
	if ctx.Err() != nil {
		return 1
	}
	if *strict {
		if bad := broken(rows); len(bad) > 0 {
			fmt.Fprintf(stderr, "skillsbench: -strict: %d row(s) not measured:\n  %s\n", len(bad), strings.Join(bad, "\n  "))
			return 3
		}
	}
	return 0
}

// broken lists the rows -strict refuses: any that failed, and the sidecar
// being unavailable. A missing nginx and rows that do not apply pass.
func broken(rows []report.Row) []string {
	var out []string
	for _, r := range rows {
		failed := strings.HasPrefix(r.Status, "failed")
		unavailable := r.Target == report.Sidecar && strings.Contains(r.Status, "unavailable")
		if failed || unavailable {
			out = append(out, fmt.Sprintf("%s %s %s: %s", r.Scenario, r.Variant, r.Target, r.Status))
		}
	}
	return out
}

func options(short bool, duration, warmup time.Duration, repeats, maxSamples int, sidecar string) (harness.Options, error) {
	self, err := os.Executable()
	if err != nil {
		return harness.Options{}, fmt.Errorf("find own executable: %w", err)
	}
	mod, err := moduleDir()
	if err != nil {
		return harness.Options{}, err
	}
	o := harness.Options{Self: self, ModuleDir: mod, SidecarBin: sidecar, Short: short,
		Duration: 5 * time.Second, Warmup: time.Second, Repeats: 3, MaxSamples: maxSamples}
	if short {
		o.Duration, o.Warmup, o.Repeats = time.Second, 200*time.Millisecond, 1
	}
	if duration > 0 {
		o.Duration = duration
	}
	if warmup > 0 {
		o.Warmup = warmup
	}
	if repeats > 0 {
		o.Repeats = repeats
	}
	if o.MaxSamples < 1 {
		return o, errors.New("-max-samples must be at least 1")
	}
	return o, nil
}

func moduleDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root (run from inside the module): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func scenarioList(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	known := harness.ScenarioNames()
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		n = strings.TrimSpace(n)
		if !contains(known, n) {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", n, strings.Join(known, ","))
		}
		out = append(out, n)
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func serve(ctx context.Context, sub string, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o harness.ServeOptions
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "loopback address to serve MCP on")
	fs.StringVar(&o.StatsListen, "stats-listen", "", "loopback address to serve the allocation counter on")
	fs.StringVar(&o.Upstream, "upstream", "", "bareproxy, loopproxy, floorproxy: the upstream URL")
	fs.DurationVar(&o.Busy, "busy", 0, "floorproxy: CPU to spin per request besides relaying it (the floor's whole cost rises by several times this)")
	var fo harness.FirstPageOptions
	fs.BoolVar(&fo.ServesSome, "serves-some", false, "firstpage-upstream: serve some of the scenario's SKILL.md files")
	fs.DurationVar(&fo.Latency, "latency", 0, "firstpage-upstream: hold each request this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	switch sub {
	case "upstream":
		err = harness.ServeUpstream(ctx, o)
	case "wrk-upstream":
		err = harness.ServeWrkUpstream(ctx, o)
	case "modernonly-upstream":
		err = harness.ServeModernOnlyUpstream(ctx, o)
	case "bareproxy":
		err = harness.ServeBareProxy(ctx, o)
	case "firstpage-upstream":
		err = harness.ServeFirstPageUpstream(ctx, o, fo)
	case "floorproxy":
		err = harness.ServeFloorProxy(ctx, o)
	default:
		err = harness.ServeLoopProxy(ctx, o)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skillsbench %s: %v\n", sub, err)
		return 1
	}
	return 0
}

// nginxConfig prints harness.NginxConfig for the given prefix, listen
// address and upstream host:port.
func nginxConfig(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("nginx-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prefix := fs.String("prefix", "", "directory nginx writes its pid, logs and temp files under (required)")
	listen := fs.String("listen", "", "loopback host:port nginx listens on (required)")
	upstream := fs.String("upstream", "", "the upstream's host:port (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *prefix == "" || *listen == "" || *upstream == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: skillsbench nginx-config -prefix DIR -listen HOST:PORT -upstream HOST:PORT")
		return 2
	}
	fmt.Fprint(stdout, harness.NginxConfig(*prefix, *listen, *upstream))
	return 0
}

func writeJSON(path string, rep report.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := report.WriteJSON(f, rep); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// machine describes the CPU without naming the host.
func machine() report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), GoVer: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
