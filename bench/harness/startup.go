package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
	"github.com/skills-sidecar/skills-sidecar/bench/stats"
)

// startKind is one process start-up to time.
type startKind struct {
	variant, target string
	// start launches the process and returns it with its MCP URL.
	start func(ctx context.Context) (*Process, string, error)
	// unavailable is why it cannot run, or "".
	unavailable string
}

// startup times exec → first successful initialize, then reads the idle
// RSS, for each process kind, repeated and interleaved.
func startup(ctx context.Context, e *Env) []report.Row {
	kinds := e.startKinds()
	runs := 5
	if e.opts.Short {
		runs = 2
	}
	idle := time.Second
	if e.opts.Short {
		idle = 300 * time.Millisecond
	}
	type res struct{ start, rss, cpu float64 }
	per := make([][]res, len(kinds))
	errs := make([]error, len(kinds))
	fmt.Fprintf(e.opts.Log, "measure start-up x%d\n", runs)
	for range runs {
		for i, k := range kinds {
			if k.unavailable != "" {
				continue
			}
			t0 := time.Now()
			p, url, err := k.start(ctx)
			if err == nil {
				err = WaitReady(ctx, p, InitializeProbe(url), time.Millisecond, 10*time.Second)
			}
			took := time.Since(t0)
			if err != nil {
				if errs[i] == nil {
					errs[i] = err
				}
				p.Stop(time.Second)
				continue
			}
			time.Sleep(idle)
			u, uerr := ReadUsage(p.PID())
			p.Stop(3 * time.Second)
			if uerr != nil {
				errs[i] = uerr
				continue
			}
			per[i] = append(per[i], res{micros(took), float64(u.RSSKiB), micros(u.CPU)})
		}
	}
	rows := make([]report.Row, 0, len(kinds))
	for i, k := range kinds {
		row := report.Row{Scenario: "start-up", Variant: k.variant, Target: k.target}
		var st, rss, cpu []float64
		for _, r := range per[i] {
			st, rss, cpu = append(st, r.start), append(rss, r.rss), append(cpu, r.cpu)
		}
		switch {
		case k.unavailable != "":
			row.Status = k.unavailable
		case len(st) == 0:
			row.Status = "failed: " + clip([]byte(firstLines(fmt.Sprint(errs[i]), 1)), 160)
		default:
			row.Status = "ok"
			row.P50Micros = stats.Median(st)
			row.P99Micros = maxOf(st)
			row.RSSKiB = int64(stats.Median(rss))
			c := stats.Median(cpu)
			row.CPUMicrosPerOp = &c
			row.Samples = int64(len(st))
			row.Extra = map[string]float64{"startup_ms": row.P50Micros / 1000, "idle_rss_kib": float64(row.RSSKiB)}
			row.Note = fmt.Sprintf("p50 = median exec → first initialize result, p99 = slowest of %d; RSS after %v idle; CPU = total to then", len(st), idle)
		}
		rows = append(rows, row)
	}
	return rows
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func (e *Env) startKinds() []startKind {
	goStart := func(sub string, extra ...string) func(context.Context) (*Process, string, error) {
		return func(context.Context) (*Process, string, error) {
			addr, err := FreeAddr()
			if err != nil {
				return nil, "", err
			}
			p, err := StartProcess(sub, e.opts.Self, append([]string{sub, "-listen", addr}, extra...), nil)
			if err != nil {
				return nil, "", err
			}
			e.procs = append(e.procs, p)
			return p, "http://" + addr + "/mcp", nil
		}
	}
	sidecar := func(extra ...string) func(context.Context) (*Process, string, error) {
		return func(context.Context) (*Process, string, error) {
			addr, err := FreeAddr()
			if err != nil {
				return nil, "", err
			}
			p, err := StartProcess("sidecar", e.SidecarBin, append([]string{"serve", "--listen", addr}, extra...), nil)
			if err != nil {
				return nil, "", err
			}
			e.procs = append(e.procs, p)
			return p, "http://" + addr + "/mcp", nil
		}
	}
	nginx := func(ctx context.Context) (*Process, string, error) {
		// launchNginx waits for the port itself; the probe then needs
		// one initialize, so the figure is still exec → first result.
		p, addr, err := e.launchNginx(ctx)
		return p, "http://" + addr + "/mcp", err
	}
	var noSidecar, noNginx string
	if e.SidecarBin == "" {
		noSidecar = "sidecar unavailable: " + e.SidecarErr
	}
	if e.NginxBin == "" {
		noNginx = "nginx unavailable: no nginx binary"
	}
	const (
		plain  = "embedded default / bare hop"
		plugin = "1,000-skill plugin"
	)
	return []startKind{
		{variant: plain, target: report.Direct, start: goStart("upstream")},
		{variant: plain, target: report.Bare, start: goStart("bareproxy", "-upstream", "http://"+e.upAddr)},
		{variant: plain, target: report.Nginx, start: nginx, unavailable: noNginx},
		{variant: plain, target: report.Sidecar, start: sidecar(), unavailable: noSidecar},
		{variant: plugin, target: report.Sidecar, start: sidecar("--plugin-dir", e.PluginDir), unavailable: noSidecar},
	}
}
