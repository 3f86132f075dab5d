// Command attack runs the era bridge's attacks of one caller against a
// sidecar process and reports what they cost it: resident memory (VmRSS)
// and open descriptors (/proc/PID/fd), before the attack, while it holds
// what it could take, and after the attacker has gone.
//
//	go run ./test/attack [-settle 3s] [-fd-margin 8]
//
// It builds skills-sidecar into a temporary folder and runs it twice on
// loopback, the gate off and callers' shares at their default (a quarter
// of each table), in front of an upstream served by this process:
//
//   - a legacy-only upstream (package demo's go-sdk server): one address
//     holds 2026-07-28 sessions with a new clientCapabilities each time,
//     then listen streams, with and without forged X-Forwarded-For;
//   - a modern-only upstream (package modernonly): one address mints
//     legacy sessions, subscribes URIs (1 MiB ones among them) and opens
//     GET streams.
//
// Each time a second address must still be served. It fails (exit 1) when
// the attacker is not refused past its share, the second caller is not
// served, or the descriptors once the attacker has gone are more than
// fd-margin above those before it, plus one for each session the era
// bridge still holds (its GET stream's upstream connection, until the
// session is closed; streams hold theirs until they end). Memory is printed, never
// judged: it depends on the Go runtime's timing. It must not talk to
// anything but loopback: every request goes to the processes it started,
// and their number is fixed.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/childproc"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command line's.
type options struct {
	settle   time.Duration
	idle     time.Duration
	fdMargin int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("attack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.settle, "settle", 3*time.Second, "wait this long after the attacker has gone before the last sample")
	fs.DurationVar(&o.idle, "idle", 95*time.Second, "then wait this long (past the upstream connections' idle timeout, 90s) before the last sample")
	fs.IntVar(&o.fdMargin, "fd-margin", 8, "descriptors allowed above the start once the attacker has gone")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a hang guard only
	defer cancel()
	dir, err := os.MkdirTemp("", "skills-sidecar-attack-")
	if err != nil {
		fmt.Fprintln(stderr, "attack:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins := map[string]string{"skills-sidecar": "./cmd/skills-sidecar"}
	for name, pkg := range bins {
		out := filepath.Join(dir, name)
		if b, err := exec.CommandContext(ctx, "go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "attack: go build %s (run it from the repository): %v: %s\n", pkg, err, b)
			return 1
		}
		bins[name] = out
	}
	// The two run side by side (each mostly waits for the idle timeout),
	// each into its own buffer, printed in order.
	scenarios := []struct {
		name     string
		upstream http.Handler
		attack   func(context.Context, *target) []string
	}{
		{"legacy-only upstream", demo.Handler(nil), attackLegacyUpstream},
		{"modern-only upstream", modernonly.Handler(modernonly.NewServer()), attackModernUpstream},
	}
	outs := make([]bytes.Buffer, len(scenarios))
	fails := make([]bool, len(scenarios))
	var wg sync.WaitGroup
	for i, s := range scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &outs[i]
			fmt.Fprintf(w, "== %s\n", s.name)
			problems, err := scenario(ctx, filepath.Join(dir, strconv.Itoa(i)), bins, s.upstream, o, s.attack, w)
			if err != nil {
				problems = append(problems, err.Error())
			}
			for _, p := range problems {
				fmt.Fprintf(w, "FAIL %s: %s\n", s.name, p)
			}
			fails[i] = len(problems) > 0
		}()
	}
	wg.Wait()
	failed := 0
	for i := range scenarios {
		_, _ = outs[i].WriteTo(stdout)
		if fails[i] {
			failed++
		}
	}
	fmt.Fprintf(stdout, "attack: %d scenarios, %d failed\n", len(scenarios), failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// target is a running sidecar under attack.
type target struct {
	url, metrics string
	pid          int
	out          io.Writer // the scenario's report
	// streams holds what the attack keeps open (listen and GET streams)
	// until the attacker goes.
	mu      sync.Mutex
	streams []io.Closer
	marks   []mark
}

// mark is a sample taken at a named point of an attack.
type mark struct {
	name string
	u    usage
}

// mark samples the sidecar after the named step of an attack.
func (t *target) mark(name string) {
	u, err := sample(t.pid)
	if err != nil {
		return
	}
	t.mu.Lock()
	t.marks = append(t.marks, mark{name, u})
	t.mu.Unlock()
}

func (t *target) keep(c io.Closer) {
	t.mu.Lock()
	t.streams = append(t.streams, c)
	t.mu.Unlock()
}

// leave closes everything the attacker kept open.
func (t *target) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.streams {
		_ = c.Close()
	}
	t.streams = nil
}

// scenario serves upstream on loopback (in this process: only the
// sidecar is measured) and starts the sidecar in front of it, samples the sidecar, runs attack, samples again, lets the attacker
// go and samples a last time.
func scenario(ctx context.Context, dir string, bins map[string]string, upstream http.Handler, o options,
	attack func(context.Context, *target) []string, stdout io.Writer) ([]string, error) {
	up := httptest.NewServer(upstream)
	defer up.Close()
	listen, err := childproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := childproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	plugin := filepath.Join(dir, "plugin")
	if err := os.MkdirAll(plugin, 0o755); err != nil {
		return nil, err
	}
	sc, err := childproc.Start("skills-sidecar", bins["skills-sidecar"], []string{"serve", "--listen", listen, "--metrics-listen", metricsAddr,
		"--upstream", up.URL + "/mcp", "--plugin-dir", plugin, "--annotations-file", "", "--auth-gate", "none"}, nil, nil)
	if err != nil {
		return nil, err
	}
	defer sc.Stop(5 * time.Second)
	if err := childproc.WaitReady(ctx, sc, func(ctx context.Context) error {
		return statusOK(ctx, "http://"+metricsAddr+"/readyz")
	}, 50*time.Millisecond, 30*time.Second); err != nil {
		return nil, err
	}
	t := &target{url: "http://" + listen + "/mcp", metrics: "http://" + metricsAddr, pid: sc.PID(), out: stdout}
	before, err := sample(t.pid)
	if err != nil {
		return nil, err
	}
	problems := attack(ctx, t)
	t.leave()
	closeClients()
	time.Sleep(o.settle)
	t.mark("attacker gone")
	// The upstream connections the attack used stay pooled until they
	// have idled hop's IdleTimeout (90 s): after it the descriptors are
	// back where they started, give or take the margin.
	time.Sleep(o.idle)
	after, err := sample(t.pid)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "%-22s %10s %6s\n", "", "VmRSS", "fds")
	for _, r := range slices.Concat([]mark{{"before", before}}, t.marks, []mark{{"after idle timeouts", after}}) {
		fmt.Fprintf(stdout, "%-22s %7d kB %6d\n", r.name, r.u.rssKB, r.u.fds)
	}
	// Each session the bridge still holds (5 minutes unused) keeps its
	// GET stream open upstream.
	held := max(gauge(ctx, t, "skills_sidecar_bridge_sessions"), 0)
	if after.fds > before.fds+o.fdMargin+held {
		problems = append(problems, fmt.Sprintf("%d descriptors after the idle timeouts, %d before, %d sessions held: more than %d above", after.fds, before.fds, held, o.fdMargin+held))
	}
	if sc.Exited() {
		problems = append(problems, "the sidecar exited: "+childproc.LastLines(sc.Output(), 5))
	}
	return problems, nil
}
