package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
	"github.com/skills-sidecar/skills-sidecar/bench/stats"
)

// loadCase is one scenario variant measured with the load generator.
type loadCase struct {
	scenario, variant string
	concurrency       int
	// worker builds the worker factory for target t; returning nil skips
	// the target (its row says why in skip).
	worker func(t Target) func(ctx context.Context, c *http.Client) (Worker, error)
	// note returns the row's note for t given the measured bytes, or "".
	note func(t Target) string
	// skip returns why t is not measured in this case, or "".
	skip func(t Target) string
	// targets, when set, are measured instead of the Env's: a case that
	// measures one hop two ways, interleaved with the others.
	targets []Target
}

// one repeat's figures for a target.
type sample struct {
	thr, p50, p99 float64
	allocs, cpu   *float64
	rss           int64
	n, errs       int64
	err           error
}

// measure runs c against every target, interleaved (A, B, C, D, A, B, …)
// for the configured repeats, and returns one row per target holding the
// median of each metric over the repeats.
func (e *Env) measure(ctx context.Context, c loadCase) []report.Row {
	fmt.Fprintf(e.opts.Log, "measure %s %s\n", c.scenario, c.variant)
	targets := e.Targets
	if c.targets != nil {
		targets = c.targets
	}
	per := make([][]sample, len(targets))
	for range e.opts.Repeats {
		for i, t := range targets {
			if t.Unavailable != "" || (c.skip != nil && c.skip(t) != "") {
				continue
			}
			per[i] = append(per[i], e.measureOne(ctx, c, t))
		}
	}
	rows := make([]report.Row, 0, len(targets))
	for i, t := range targets {
		row := report.Row{Scenario: c.scenario, Variant: c.variant, Target: t.Name}
		if c.note != nil {
			row.Note = c.note(t)
		}
		switch {
		case t.Unavailable != "":
			row.Status = t.Unavailable
		case c.skip != nil && c.skip(t) != "":
			row.Status = c.skip(t)
		default:
			row = combine(row, per[i])
		}
		rows = append(rows, row)
	}
	return rows
}

func (e *Env) measureOne(ctx context.Context, c loadCase, t Target) sample {
	var (
		u0      ProcUsage
		m0      float64
		mallocs = t.MetricsURL != ""
	)
	spec := LoadSpec{
		Concurrency: c.concurrency,
		Warmup:      e.opts.Warmup,
		Duration:    e.opts.Duration,
		MaxSamples:  e.opts.MaxSamples,
		NewWorker:   c.worker(t),
		OnMeasure: func() {
			u0, _ = t.usage()
			if mallocs {
				var err error
				if m0, err = Mallocs(ctx, t.MetricsURL); err != nil {
					mallocs = false
				}
			}
		},
	}
	res := RunLoad(ctx, spec)
	u1, uerr := t.usage()
	s := sample{n: int64(len(res.Samples)), errs: res.Errors, err: res.Err}
	if len(res.Samples) == 0 || res.Elapsed <= 0 {
		return s
	}
	sum := stats.Summarize(res.Samples)
	s.thr = float64(len(res.Samples)) / res.Elapsed.Seconds()
	s.p50, s.p99 = micros(sum.P50), micros(sum.P99)
	if res.Ops > 0 && uerr == nil && u0.RSSKiB > 0 {
		cpu := micros(u1.CPU-u0.CPU) / float64(res.Ops)
		s.cpu, s.rss = &cpu, u1.RSSKiB
	}
	if mallocs && res.Ops > 0 {
		if m1, err := Mallocs(ctx, t.MetricsURL); err == nil {
			a := (m1 - m0) / float64(res.Ops)
			s.allocs = &a
		}
	}
	return s
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// combine folds repeats into row: the median of each metric separately.
func combine(row report.Row, reps []sample) report.Row {
	var thr, p50, p99, allocs, cpu, rss []float64
	var firstErr error
	for _, s := range reps {
		row.Samples += s.n
		row.Errors += s.errs
		if s.err != nil && firstErr == nil {
			firstErr = s.err
		}
		if s.n == 0 {
			continue
		}
		thr, p50, p99 = append(thr, s.thr), append(p50, s.p50), append(p99, s.p99)
		if s.allocs != nil {
			allocs = append(allocs, *s.allocs)
		}
		if s.cpu != nil {
			cpu = append(cpu, *s.cpu)
			rss = append(rss, float64(s.rss))
		}
	}
	if len(thr) == 0 {
		row.Status = "failed: no request completed in the measured window"
		if firstErr != nil {
			row.Status = "failed: " + clip([]byte(firstLines(firstErr.Error(), 1)), 160)
		}
		return row
	}
	row.Status = "ok"
	row.Throughput, row.P50Micros, row.P99Micros = stats.Median(thr), stats.Median(p50), stats.Median(p99)
	if len(allocs) > 0 {
		v := stats.Median(allocs)
		row.AllocsPerOp = &v
	}
	if len(cpu) > 0 {
		v := stats.Median(cpu)
		row.CPUMicrosPerOp = &v
		row.RSSKiB = int64(stats.Median(rss))
	}
	if row.Errors > 0 && firstErr != nil && row.Note == "" {
		row.Note = "first error: " + clip([]byte(firstErr.Error()), 120)
	}
	return row
}
