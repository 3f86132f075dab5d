package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// restartGrace is how long after the upstream is back that clients may
// still be noticing its restart (a request in flight, a session to
// re-initialize); errors in that window are expected.
const restartGrace = 5 * time.Second

// Soak runs the whole soak and returns its report. An error means the run
// could not be set up or was interrupted; the report is then nil or partial.
func Soak(ctx context.Context, o Options) (*Report, error) {
	e, err := setup(ctx, o)
	defer e.stop()
	if err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now(), Duration: Seconds(o.Duration), Warmup: Seconds(o.Warmup), Workers: o.Workers,
		Streamers: o.StreamWorkers, Skills: o.Skills, MaxRequests: o.MaxRequests, Race: o.Race}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: 4 * (o.Workers + o.StreamWorkers),
		MaxIdleConnsPerHost: 4 * (o.Workers + o.StreamWorkers), DisableCompression: true}}
	sc := &Scraper{URL: e.metricsBase + "/metrics", Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}}
	sctx, stopScrape := context.WithCancel(ctx)
	var scrapeWG sync.WaitGroup
	scrapeWG.Go(func() { sc.Run(sctx, time.Second) })
	defer scrapeWG.Wait()
	defer stopScrape()

	e.logf("warm-up for %v with %d+%d workers", o.Warmup, o.Workers, o.StreamWorkers)
	warm := e.newLoad(client, NewStats(), o.MaxRequests)
	soft, cancel := context.WithTimeout(ctx, o.Warmup)
	warm.Run(ctx, soft, o.Workers, o.StreamWorkers)
	cancel()
	warmSummary, _ := warm.Stats.Summary()
	rep.WarmupTotal = warmSummary.Total
	base, err := e.settle(ctx, client, sc, nil)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	rep.Baseline = base
	e.logf("baseline: %d goroutines, %d fds, %d upstream connections; load for %v", base.Goroutines, base.FDs, base.Sockets.Upstream, o.Duration)

	load := e.newLoad(client, NewStats(), o.MaxRequests-warm.Sent())
	soft, cancel = context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var ch chaosLog
	var chaosWG sync.WaitGroup
	chaosWG.Go(func() { ch = e.chaos(ctx, soft) })
	load.Run(ctx, soft, o.Workers, o.StreamWorkers)
	rep.CapReached = load.Sent() >= load.MaxRequests
	cancel()
	chaosWG.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	e.logf("load done: %d requests; checking the catalog and waiting for the sidecar to settle", load.Sent())
	final, finalErr := load.finalWalk(ctx)
	after, afterErr := e.settle(ctx, client, sc, &base)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	rep.After = after
	rep.Clients, rep.ErrorsOutsideRestart = summarize(load.Stats, ch.windows)
	rep.Clients.NoReply += warmSummary.NoReply
	rep.Swaps, rep.UpstreamRestarts, rep.OutageMs = ch.swaps, ch.restarts, ch.outage.Milliseconds()
	if afterErr == nil {
		rep.ReloadsOK, rep.ReloadsFailed = after.ReloadsOK-base.ReloadsOK, after.ReloadsFailed-base.ReloadsFailed
	}
	rep.Peak, _, rep.Scrapes, rep.ScrapeFailures = sc.Peak()
	rep.SidecarErrorLines = int(e.errorLines.Load())
	rep.SidecarLog, rep.CatalogLoads, rep.PartialLoads, rep.ItemSamples = e.logs.summary()
	alive := e.aliveCheck(ctx)
	exitErr := e.stopSidecar()
	rep.Checks = append(rep.Checks, alive)
	afterRestart := 0
	if !ch.upAt.IsZero() {
		afterRestart = load.Stats.ResultsAfter(ch.upAt)
	}
	rep.Checks = append(rep.Checks, clientChecks(rep.Clients, warmSummary, rep.ErrorsOutsideRestart, ch, afterRestart)...)
	rep.Checks = append(rep.Checks, catalogChecks(rep, ch, final, finalErr, e.plugin)...)
	if afterErr != nil {
		// A sidecar that cannot be measured (it died, or /metrics broke)
		// must not pass the leak checks on zero values.
		rep.Checks = append(rep.Checks, Check{Name: "sidecar measured after the load", Detail: afterErr.Error()})
	} else {
		rep.Checks = append(rep.Checks, LeakChecks(base, after, o.Tolerance, 2*(o.Workers+o.StreamWorkers)+4)...)
	}
	rep.Checks = append(rep.Checks, e.exitChecks(exitErr)...)
	rep.Finish()
	return rep, nil
}

func (e *env) newLoad(client *http.Client, stats *Stats, maxRequests int64) *Load {
	return &Load{URL: e.mcpURL, Client: client, Skills: e.o.Skills, MaxRequests: maxRequests,
		RequestTimeout: e.o.RequestTimeout, StreamHold: e.o.StreamHold, SessionRequests: e.o.SessionRequests, Stats: stats}
}

// summarize returns what the clients saw and the errors outside windows.
func summarize(s *Stats, windows []Window) (ClientSummary, map[string]int) {
	sum, events := s.Summary()
	return sum, Outside(events, windows)
}

// settle closes the client's idle connections and waits, up to -settle,
// for the sidecar to be quiet: no stream open, no client connection, and
// goroutines and descriptors steady over two samples (or, after the load,
// back within tolerance of base). It returns the last sample.
func (e *env) settle(ctx context.Context, client *http.Client, sc *Scraper, base *Resources) (Resources, error) {
	client.CloseIdleConnections()
	deadline := time.Now().Add(e.o.Settle)
	var prev, last Resources
	var lastErr error
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return Resources{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		r, err := e.resources(ctx, sc)
		if err != nil {
			lastErr = err
		} else {
			last, lastErr = r, nil
			quiet := r.ActiveStreams == 0 && r.Sockets.Inbound == 0
			steady := i > 0 && r.Goroutines == prev.Goroutines && r.FDs == prev.FDs
			if quiet && base == nil && steady {
				return r, nil
			}
			if quiet && base != nil && steady && allPass(LeakChecks(*base, r, e.o.Tolerance, 1<<30)) {
				return r, nil
			}
			prev = r
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return Resources{}, lastErr
			}
			return last, nil
		}
	}
}

func allPass(cs []Check) bool {
	for _, c := range cs {
		if !c.Pass {
			return false
		}
	}
	return true
}

// chaosLog is what the chaos schedule did.
type chaosLog struct {
	swaps, swapErrors, restarts int
	outage                      time.Duration
	restartErr                  error
	windows                     []Window
	// upAt is when the restarted upstream was ready.
	upAt time.Time
}

// chaos swaps the plugin's ..data -reloads times, evenly over the load,
// and restarts the upstream once, at 45% of it.
func (e *env) chaos(ctx, soft context.Context) chaosLog {
	type step struct {
		at      time.Duration
		restart bool
	}
	var steps []step
	for i := 1; i <= e.o.Reloads; i++ {
		steps = append(steps, step{at: e.o.Duration * time.Duration(i) / time.Duration(e.o.Reloads+1)})
	}
	steps = append(steps, step{at: e.o.Duration * 45 / 100, restart: true})
	sort.Slice(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	var log chaosLog
	start := time.Now()
	for _, s := range steps {
		select {
		case <-soft.Done():
			return log
		case <-time.After(time.Until(start.Add(s.at))):
		}
		if !s.restart {
			if err := e.plugin.Swap(); err != nil {
				log.swapErrors++
				e.logf("swap: %v", err)
				continue
			}
			log.swaps++
			e.logf("swapped ..data to revision %d", e.plugin.Rev())
			continue
		}
		from := time.Now()
		down, err := e.restartUpstream(ctx)
		log.restarts++
		log.outage, log.restartErr, log.upAt = down, err, time.Now()
		log.windows = append(log.windows, Window{From: from, To: time.Now().Add(restartGrace)})
		e.logf("restarted the upstream: down for %v (err %v)", down.Round(time.Millisecond), err)
	}
	return log
}

// aliveCheck: the sidecar process still runs and answers /healthz.
func (e *env) aliveCheck(ctx context.Context) Check {
	c := Check{Name: "sidecar stayed up", Pass: true, Detail: "running and /healthz answers 200"}
	if e.sidecar.Exited() {
		c.Pass, c.Detail = false, "exited during the run: "+lastLines(e.sidecar.Output(), 5)
	} else if err := get200(ctx, e.metricsBase+"/healthz"); err != nil {
		c.Pass, c.Detail = false, err.Error()
	}
	return c
}

// exitChecks: SIGTERM ends the sidecar with status 0, and its log holds no
// panic or data race report.
func (e *env) exitChecks(exitErr error) []Check {
	exit := Check{Name: "sidecar drained and exited 0 on SIGTERM", Pass: exitErr == nil, Detail: "exit status 0"}
	if exitErr != nil {
		exit.Detail = exitErr.Error()
	}
	clean := Check{Name: "sidecar logged no panic or data race", Pass: !e.raceOrPanic.Load(),
		Detail: fmt.Sprintf("%d warn and %d error log lines", e.warnLines.Load(), e.errorLines.Load())}
	if !clean.Pass {
		clean.Detail = lastLines(e.sidecar.Output(), 20)
	}
	return []Check{exit, clean}
}

// clientChecks are the verdicts on what the clients saw.
func clientChecks(c, warm ClientSummary, outside map[string]int, ch chaosLog, afterRestart int) []Check {
	var served []string
	missing := []string{}
	for _, m := range []string{"tools/call", "skills/list", "resources/read", "GET stream"} {
		served = append(served, fmt.Sprintf("%s %d", m, c.Requests[m].Results))
		if c.Requests[m].Results == 0 {
			missing = append(missing, m)
		}
	}
	return []Check{
		{Name: "every request ended with a result or an error", Pass: c.NoReply == 0,
			Detail: fmt.Sprintf("%d ended without either (warm-up included)", c.NoReply)},
		{Name: "no request hung past the client timeout", Pass: c.Hung == 0 && warm.Hung == 0,
			Detail: fmt.Sprintf("%d timed out", c.Hung+warm.Hung)},
		{Name: "results carried what was asked for", Pass: c.WrongContent == 0 && warm.WrongContent == 0,
			Detail: fmt.Sprintf("%d wrong echo texts, skill files or pages", c.WrongContent+warm.WrongContent)},
		{Name: "every kind of request was served", Pass: len(missing) == 0,
			Detail: strings.Join(served, ", ") + missingNote(missing)},
		{Name: "skills/list walks saw every skill exactly once", Pass: c.Walks.Inconsistent == 0 && c.Walks.Complete > 0,
			Detail: fmt.Sprintf("%d complete, %d inconsistent", c.Walks.Complete, c.Walks.Inconsistent)},
		{Name: "the upstream restarted and new sessions worked after it",
			Pass:   ch.restarts == 1 && ch.restartErr == nil && afterRestart > 0 && c.Sessions.Reinitialized > 0,
			Detail: fmt.Sprintf("%d restart, %d results after it, %d sessions opened again after 404", ch.restarts, afterRestart, c.Sessions.Reinitialized)},
		{Name: "no errors outside the upstream restart window", Pass: len(outside) == 0, Detail: kindsNote(outside)},
	}
}

func missingNote(m []string) string {
	if len(m) == 0 {
		return ""
	}
	return "; none served: " + strings.Join(m, ", ")
}

func kindsNote(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d× %s", m[k], k))
	}
	return strings.Join(parts, "; ")
}

// catalogChecks: every swap was reloaded, and the last revision is served.
func catalogChecks(rep *Report, ch chaosLog, final map[string]string, finalErr error, p *Plugin) []Check {
	reload := Check{Name: "every swap of ..data was reloaded", Pass: ch.swapErrors == 0 && rep.ReloadsOK >= ch.swaps && rep.ReloadsFailed == 0,
		Detail: fmt.Sprintf("%d swaps (%d failed to write), skills_sidecar_catalog_reloads_total +%d success, +%d failure",
			ch.swaps, ch.swapErrors, rep.ReloadsOK, rep.ReloadsFailed)}
	latest := Check{Name: "the last revision is served after the load", Pass: finalErr == nil && len(final) == p.Skills}
	stale := 0
	for _, d := range final {
		if !strings.Contains(d, RevTag(p.Rev())) {
			stale++
		}
	}
	latest.Pass = latest.Pass && stale == 0
	latest.Detail = fmt.Sprintf("%d skills listed, %d not at revision %d", len(final), stale, p.Rev())
	if finalErr != nil {
		latest.Detail = finalErr.Error()
	}
	whole := Check{Name: "every catalog load published the whole plugin", Pass: rep.PartialLoads == 0 && rep.Clients.Walks.MixedPages == 0,
		Detail: fmt.Sprintf("%d loads logged, %d with fewer than %d skills or with problems; %d skills/list pages mixing revisions",
			rep.CatalogLoads, rep.PartialLoads, p.Skills, rep.Clients.Walks.MixedPages)}
	return []Check{reload, latest, whole}
}
