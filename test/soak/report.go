package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// Check is one pass/fail line of the verdict.
type Check struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// Resources is the sidecar's footprint at one moment: what /metrics says
// and its established TCP connections.
type Resources struct {
	Sample
	Sockets Sockets `json:"sockets"`
}

// Tolerance is how far goroutines and descriptors may stay above the
// baseline after the load before the run calls it a leak.
type Tolerance struct {
	Goroutines int `json:"goroutines"`
	FDs        int `json:"fds"`
}

// LeakChecks compares the sidecar after the load with the baseline taken
// after warm-up. Keep-alive connections to the upstream are not leaks: they
// sit in the sidecar's bounded pool and close after its idle timeout, and
// their number after a load depends on the load's peak concurrency. So they
// are taken out of the descriptor count and checked on their own against
// poolBound, the most a pool can hold for the run's concurrency; a leak of
// connections grows with the requests served and shows there. A pooled
// connection costs no goroutine (package hop has no per-connection read or
// write loop), so goroutines are compared as they are.
func LeakChecks(base, after Resources, tol Tolerance, poolBound int) []Check {
	bf := base.FDs - base.Sockets.Upstream
	af := after.FDs - after.Sockets.Upstream
	return []Check{
		{
			Name: "goroutines did not leak",
			Pass: after.Goroutines <= base.Goroutines+tol.Goroutines,
			Detail: fmt.Sprintf("after load %d, baseline %d, tolerance +%d",
				after.Goroutines, base.Goroutines, tol.Goroutines),
		},
		{
			Name: "file descriptors did not leak",
			Pass: af <= bf+tol.FDs,
			Detail: fmt.Sprintf("after load %d (%d raw), baseline %d (%d raw), tolerance +%d",
				af, after.FDs, bf, base.FDs, tol.FDs),
		},
		{
			Name:   "upstream connection pool stayed bounded",
			Pass:   after.Sockets.Upstream <= poolBound,
			Detail: fmt.Sprintf("%d connections to the upstream after load, bound %d", after.Sockets.Upstream, poolBound),
		},
		{
			Name:   "no stream left open",
			Pass:   after.ActiveStreams == 0,
			Detail: fmt.Sprintf("skills_sidecar_active_streams %d after load", after.ActiveStreams),
		},
	}
}

// Report is the soak's result, printed and optionally written as JSON.
type Report struct {
	Started     time.Time     `json:"started"`
	Duration    Seconds       `json:"duration_seconds"`
	Warmup      Seconds       `json:"warmup_seconds"`
	Workers     int           `json:"request_workers"`
	Streamers   int           `json:"stream_workers"`
	Skills      int           `json:"skills"`
	MaxRequests int64         `json:"max_requests"`
	CapReached  bool          `json:"cap_reached"`
	Race        bool          `json:"race_build"`
	Clients     ClientSummary `json:"clients"`
	WarmupTotal int           `json:"warmup_requests"`
	// ErrorsOutsideRestart are errors that overlapped no restart window.
	ErrorsOutsideRestart map[string]int `json:"errors_outside_restart_window"`
	Swaps                int            `json:"catalog_swaps"`
	ReloadsOK            int            `json:"catalog_reloads_success"`
	ReloadsFailed        int            `json:"catalog_reloads_failure"`
	UpstreamRestarts     int            `json:"upstream_restarts"`
	OutageMs             int64          `json:"upstream_outage_ms"`
	Baseline             Resources      `json:"baseline"`
	Peak                 Sample         `json:"peak"`
	After                Resources      `json:"after_load"`
	Scrapes              int            `json:"scrapes"`
	ScrapeFailures       int            `json:"scrape_failures"`
	SidecarErrorLines    int            `json:"sidecar_error_log_lines"`
	// SidecarLog counts the sidecar's warn and error lines by message.
	SidecarLog map[string]int `json:"sidecar_log"`
	// CatalogLoads counts "plugin loaded" log lines; PartialLoads those
	// that published fewer skills than the plugin has, or problems.
	CatalogLoads int      `json:"catalog_loads_logged"`
	PartialLoads int      `json:"catalog_partial_loads"`
	ItemSamples  []string `json:"catalog_problem_samples,omitempty"`
	Checks       []Check  `json:"checks"`
	Passed       int      `json:"passed"`
	Failed       int      `json:"failed"`
	Verdict      string   `json:"verdict"`
}

// Seconds is a duration written as seconds in JSON.
type Seconds time.Duration

// MarshalJSON writes the duration as a number of seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(s).Seconds())
}

// Finish counts the checks and sets the verdict.
func (r *Report) Finish() {
	r.Passed, r.Failed = 0, 0
	for _, c := range r.Checks {
		if c.Pass {
			r.Passed++
		} else {
			r.Failed++
		}
	}
	r.Verdict = "pass"
	if r.Failed > 0 {
		r.Verdict = "fail"
	}
}

// Print writes the report for people, ending with "soak: N passed, N
// failed".
func (r *Report) Print(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("soak report")
	p("  duration        %v load after %v warm-up; %d request workers, %d stream workers; %d skills",
		time.Duration(r.Duration).Round(100*time.Millisecond), time.Duration(r.Warmup), r.Workers, r.Streamers, r.Skills)
	capNote := ""
	if r.CapReached {
		capNote = " (request cap reached)"
	}
	p("  requests        %d sent, %d results, %.0f/s%s", r.Clients.Total, r.Clients.Results,
		float64(r.Clients.Results)/time.Duration(r.Duration).Seconds(), capNote)
	for _, m := range slices.Sorted(maps.Keys(r.Clients.Requests)) {
		s := r.Clients.Requests[m]
		p("    %-26s sent %7d  results %7d  errors %5d  transport %5d  no reply %d", m, s.Sent, s.Results, s.Errors, s.Transport, s.NoReply)
	}
	p("  walks           skills/list: %d complete, %d inconsistent, %d incomplete, %d pages (%d mixing revisions)",
		r.Clients.Walks.Complete, r.Clients.Walks.Inconsistent, r.Clients.Walks.Incomplete, r.Clients.Walks.Pages, r.Clients.Walks.MixedPages)
	p("  streams         %d opened, %d held to the end, %d ended early", r.Clients.Streams.Opened, r.Clients.Streams.HeldFull, r.Clients.Streams.EndedEarly)
	p("  sessions        %d opened (%d again after 404), %d deleted", r.Clients.Sessions.Opened, r.Clients.Sessions.Reinitialized, r.Clients.Sessions.Deleted)
	p("  errors by kind")
	if len(r.Clients.Errors) == 0 {
		p("    none")
	}
	for _, k := range slices.Sorted(maps.Keys(r.Clients.Errors)) {
		p("    %6d  %s", r.Clients.Errors[k], k)
	}
	for _, b := range r.Clients.NoReplyBody {
		p("    sample of a reply without result or error: %s", strings.ReplaceAll(b, "\n", `\n`))
	}
	p("  reloads         %d swaps of ..data; metrics: %d successful, %d failed reloads; log: %d loads, %d partial",
		r.Swaps, r.ReloadsOK, r.ReloadsFailed, r.CatalogLoads, r.PartialLoads)
	for _, s := range r.ItemSamples {
		p("    problem reported by a load: %s", s)
	}
	p("  sidecar log")
	for _, k := range slices.Sorted(maps.Keys(r.SidecarLog)) {
		p("    %6d  %s", r.SidecarLog[k], k)
	}
	p("  upstream        %d restart(s), %d ms without an upstream", r.UpstreamRestarts, r.OutageMs)
	p("  peak            goroutines %d, fds %d, RSS %.1f MiB, active streams %d",
		r.Peak.Goroutines, r.Peak.FDs, float64(r.Peak.RSSBytes)/(1<<20), r.Peak.ActiveStreams)
	p("  baseline        goroutines %d, fds %d, RSS %.1f MiB, upstream connections %d",
		r.Baseline.Goroutines, r.Baseline.FDs, float64(r.Baseline.RSSBytes)/(1<<20), r.Baseline.Sockets.Upstream)
	p("  after load      goroutines %d, fds %d, RSS %.1f MiB, upstream connections %d, inbound %d",
		r.After.Goroutines, r.After.FDs, float64(r.After.RSSBytes)/(1<<20), r.After.Sockets.Upstream, r.After.Sockets.Inbound)
	p("  checks")
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.Pass {
			mark = "FAIL"
		}
		p("    %s %s: %s", mark, c.Name, c.Detail)
	}
	p("  verdict         %s", r.Verdict)
	p("soak: %d passed, %d failed", r.Passed, r.Failed)
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
