package wrkstat

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/bench/stats"
)

// Target names the script gives its hops.
const (
	Direct  = "direct"
	Bare    = "bare"
	Nginx   = "nginx"
	Sidecar = "sidecar"
	// SidecarNetHTTP is the same sidecar binary serving its listener
	// with net/http's server (http-server: net/http), beside the default.
	SidecarNetHTTP = "sidecar-nethttp"
	// Floor is the least a hop in a Go process costs: a relay that only
	// frames HTTP/1.1 messages, on the sidecar's raw sockets.
	Floor = "floor"
	// FloorBusy is the floor spending a fixed extra CPU per request
	// (FLOOR_BUSY): the floor's bytes at about another hop's CPU.
	FloorBusy = "floor-busy"
)

// Spread is a median over rounds and the range around it.
type Spread struct {
	Median, Min, Max float64
	// N is how many rounds it is over; 0 means not measured.
	N int
}

// spreadOf summarises xs.
func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	return Spread{Median: stats.Median(xs), Min: slices.Min(xs), Max: slices.Max(xs), N: len(xs)}
}

// format prints the median with its range over rounds, e.g. "2.10× (1.95–2.31)".
func (s Spread) format(prec int, unit string) string {
	if s.N == 0 {
		return "–"
	}
	m := fmt.Sprintf("%.*f%s", prec, s.Median, unit)
	if s.N == 1 {
		return m + " (1 round)"
	}
	return fmt.Sprintf("%s (%.*f–%.*f)", m, prec, s.Min, prec, s.Max)
}

// Verdicts of a target row.
const (
	Pass         = "PASS"
	Miss         = "MISS"
	WithinSpread = "WITHIN-SPREAD"
	NotMeasured  = "NOT MEASURED"
)

// Verdict compares a figure with its target: PASS when the median meets it
// (at most target when atMost, else at least); WITHIN-SPREAD when the
// median misses it by less than the spread over rounds (max − min), which
// is reported and not claimed; MISS otherwise.
func Verdict(s Spread, target float64, atMost bool) string {
	if s.N == 0 {
		return NotMeasured
	}
	miss := s.Median - target
	if !atMost {
		miss = target - s.Median
	}
	switch {
	case miss <= 0:
		return Pass
	case miss < s.Max-s.Min:
		return WithinSpread
	default:
		return Miss
	}
}

// group is the runs of one kind, era and concurrency.
type group struct {
	kind, era string
	conns     int
}

// index orders the runs: groups and targets in the order they first
// appear, and each target's runs by round.
type index struct {
	groups  []group
	targets []string
	runs    map[group]map[string]map[int]Run
}

func indexRuns(runs []Run) index {
	ix := index{runs: map[group]map[string]map[int]Run{}}
	for _, r := range runs {
		g := group{r.Kind, r.Era, r.Conns}
		if ix.runs[g] == nil {
			ix.runs[g] = map[string]map[int]Run{}
			ix.groups = append(ix.groups, g)
		}
		if ix.runs[g][r.Target] == nil {
			ix.runs[g][r.Target] = map[int]Run{}
		}
		if !slices.Contains(ix.targets, r.Target) {
			ix.targets = append(ix.targets, r.Target)
		}
		ix.runs[g][r.Target][r.Round] = r
	}
	return ix
}

// each returns f over target's rounds in g, skipping rounds with no
// operations (f's value would be meaningless).
func (ix index) each(g group, target string, f func(Run) float64) []float64 {
	var out []float64
	for _, round := range sortedKeys(ix.runs[g][target]) {
		r := ix.runs[g][target][round]
		if r.Events <= 0 {
			continue
		}
		out = append(out, f(r))
	}
	return out
}

// groupsWhere returns the groups keep chooses, in the order they ran.
func (ix index) groupsWhere(keep func(group) bool) []group {
	var gs []group
	for _, g := range ix.groups {
		if keep(g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// median prints the median of f over target's rounds in g to one
// decimal, or "–" when no round recorded it.
func (ix index) median(g group, target string, f func(Run) float64) string {
	s := spreadOf(noNaN(ix.each(g, target, f)))
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", s.Median)
}

// ratio returns f(a)/f(b) round by round, over the rounds both measured.
func (ix index) ratio(g group, a, b string, f func(Run) float64) []float64 {
	return ix.paired(g, a, b, f, func(x, y float64) (float64, bool) { return x / y, y > 0 })
}

// diff returns f(a) − f(b) round by round.
func (ix index) diff(g group, a, b string, f func(Run) float64) []float64 {
	return ix.paired(g, a, b, f, func(x, y float64) (float64, bool) { return x - y, true })
}

func (ix index) paired(g group, a, b string, f func(Run) float64, op func(x, y float64) (float64, bool)) []float64 {
	var out []float64
	for _, round := range sortedKeys(ix.runs[g][a]) {
		ra := ix.runs[g][a][round]
		rb, ok := ix.runs[g][b][round]
		if !ok || ra.Events <= 0 || rb.Events <= 0 {
			continue
		}
		if v, ok := op(f(ra), f(rb)); ok {
			out = append(out, v)
		}
	}
	return out
}

func sortedKeys(m map[int]Run) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Per-operation figures of a run; an operation is a request for "call"
// and a relayed event for "sse".
func rps(r Run) float64           { return r.Requests / r.Seconds }
func cpuPerOp(r Run) float64      { return r.CPU / r.Events }
func syscallsPerOp(r Run) float64 { return r.Syscalls / r.Events }
func mallocsPerOp(r Run) float64  { return perOp(r.Mallocs, r) }
func switchesPerOp(r Run) float64 { return perOp(r.Switches, r) }

// perOp is a count of r per operation, NaN when the run did not record it
// (a negative count).
func perOp(n float64, r Run) float64 {
	if n < 0 {
		return math.NaN()
	}
	return n / r.Events
}

// noNaN drops the NaNs of targets without an allocation counter and of
// runs recorded without context switches.
func noNaN(xs []float64) []float64 {
	return slices.DeleteFunc(xs, math.IsNaN)
}

// Write renders every table: the runs by group and target, the ratios to
// nginx, the floor's, the two servers', the strace pass, the Go benchmark and the target table.
func Write(w io.Writer, rec Records) error {
	ix := indexRuns(rec.Runs)
	var b strings.Builder
	writeRuns(&b, ix)
	writeRatios(&b, ix)
	writeFloor(&b, ix)
	writeServers(&b, ix)
	writeBudget(&b, ix)
	writeBusyFloor(&b, ix)
	writeStrace(&b, rec.Straces)
	writeBenches(&b, rec.Benches)
	writeTargets(&b, ix, rec)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeRuns(b *strings.Builder, ix index) {
	b.WriteString("\n### Each hop: medians over rounds (min–max)\n\n")
	b.WriteString("| kind | era | conns | target | req/s | events/s | p50 µs | p99 µs | CPU µs/op | r+w syscalls/op | switches/op | allocs/op | errors | wrong |\n")
	b.WriteString("|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range ix.groups {
		for _, t := range ix.targets {
			if ix.runs[g][t] == nil {
				continue
			}
			var errs, wrong float64
			for _, r := range ix.runs[g][t] {
				errs += r.Errors
				wrong += r.Wrong
			}
			events := "–"
			if g.kind == KindSSE {
				events = spreadOf(ix.each(g, t, func(r Run) float64 { return r.Events / r.Seconds })).format(0, "")
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f |\n",
				g.kind, g.era, g.conns, t,
				spreadOf(ix.each(g, t, rps)).format(0, ""), events,
				spreadOf(ix.each(g, t, func(r Run) float64 { return r.P50 })).format(0, ""),
				spreadOf(ix.each(g, t, func(r Run) float64 { return r.P99 })).format(0, ""),
				spreadOf(ix.each(g, t, cpuPerOp)).format(1, ""),
				spreadOf(ix.each(g, t, syscallsPerOp)).format(2, ""),
				spreadOf(noNaN(ix.each(g, t, switchesPerOp))).format(2, ""),
				spreadOf(noNaN(ix.each(g, t, mallocsPerOp))).format(1, ""),
				errs, wrong)
		}
	}
}

func writeRatios(b *strings.Builder, ix index) {
	b.WriteString("\n### Against nginx, round by round: median (min–max)\n\n")
	b.WriteString("| kind | era | conns | CPU/op sidecar÷nginx | CPU/op bare÷nginx | throughput sidecar÷nginx | throughput bare÷nginx | r+w syscalls/op sidecar−nginx | bare−nginx | switches/op sidecar−nginx |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range ix.groups {
		if ix.runs[g][Nginx] == nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", g.kind, g.era, g.conns,
			spreadOf(ix.ratio(g, Sidecar, Nginx, cpuPerOp)).format(2, "×"),
			spreadOf(ix.ratio(g, Bare, Nginx, cpuPerOp)).format(2, "×"),
			spreadOf(ix.ratio(g, Sidecar, Nginx, rps)).format(2, "×"),
			spreadOf(ix.ratio(g, Bare, Nginx, rps)).format(2, "×"),
			spreadOf(ix.diff(g, Sidecar, Nginx, syscallsPerOp)).format(2, ""),
			spreadOf(ix.diff(g, Bare, Nginx, syscallsPerOp)).format(2, ""),
			spreadOf(noNaN(ix.diff(g, Sidecar, Nginx, switchesPerOp))).format(2, ""))
	}
}

// writeFloor sets the Go floor against nginx and the sidecar against the
// floor, round by round, when the floor ran: what any Go hop costs more
// than nginx, and what the sidecar costs more than any Go hop.
func writeFloor(b *strings.Builder, ix index) {
	gs := ix.groupsWhere(func(g group) bool { return ix.runs[g][Floor] != nil })
	if len(gs) == 0 {
		return
	}
	b.WriteString("\n### Against the Go floor, round by round: median (min–max)\n\n")
	b.WriteString("| kind | era | conns | CPU/op floor÷nginx | throughput floor÷nginx | CPU/op sidecar÷floor | throughput sidecar÷floor | r+w syscalls/op sidecar−floor | switches/op sidecar−floor |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range gs {
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", g.kind, g.era, g.conns,
			spreadOf(ix.ratio(g, Floor, Nginx, cpuPerOp)).format(2, "×"),
			spreadOf(ix.ratio(g, Floor, Nginx, rps)).format(2, "×"),
			spreadOf(ix.ratio(g, Sidecar, Floor, cpuPerOp)).format(2, "×"),
			spreadOf(ix.ratio(g, Sidecar, Floor, rps)).format(2, "×"),
			spreadOf(ix.diff(g, Sidecar, Floor, syscallsPerOp)).format(2, ""),
			spreadOf(noNaN(ix.diff(g, Sidecar, Floor, switchesPerOp))).format(2, ""))
	}
}

// writeServers compares the sidecar on its own HTTP/1.1 server with the
// same binary on net/http's, round by round, when both ran.
func writeServers(b *strings.Builder, ix index) {
	gs := ix.groupsWhere(func(g group) bool { return ix.runs[g][Sidecar] != nil && ix.runs[g][SidecarNetHTTP] != nil })
	if len(gs) == 0 {
		return
	}
	b.WriteString("\n### The sidecar's two servers, round by round: median (min–max)\n\n")
	b.WriteString("| kind | era | conns | CPU/op own÷net/http | CPU/op net/http÷nginx | throughput own÷net/http | r+w syscalls/op own−net/http | allocs/op own−net/http | switches/op own−net/http |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range gs {
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", g.kind, g.era, g.conns,
			spreadOf(ix.ratio(g, Sidecar, SidecarNetHTTP, cpuPerOp)).format(2, "×"),
			spreadOf(ix.ratio(g, SidecarNetHTTP, Nginx, cpuPerOp)).format(2, "×"),
			spreadOf(ix.ratio(g, Sidecar, SidecarNetHTTP, rps)).format(2, "×"),
			spreadOf(ix.diff(g, Sidecar, SidecarNetHTTP, syscallsPerOp)).format(2, ""),
			spreadOf(noNaN(ix.diff(g, Sidecar, SidecarNetHTTP, mallocsPerOp))).format(1, ""),
			spreadOf(noNaN(ix.diff(g, Sidecar, SidecarNetHTTP, switchesPerOp))).format(2, ""))
	}
}

// Per-call CPU of the upstream behind the target and of wrk, NaN when the
// run did not record it.
func upstreamPerOp(r Run) float64 { return perOp(r.UpstreamCPU, r) }
func loadPerOp(r Run) float64     { return perOp(r.LoadCPU, r) }

// allPerOp is the CPU every process of the run spent per call: the hop,
// the upstream and wrk.
func allPerOp(r Run) float64 { return cpuPerOp(r) + upstreamPerOp(r) + loadPerOp(r) }

// writeBudget shows where the machine's CPU went per call through nginx
// and through the sidecar, when the upstream's and wrk's were recorded.
// Where the load keeps every core busy, throughput is the cores' time
// divided by all the CPU a call costs, so the ratio of the two totals
// predicts the throughput ratio: the hop reaches nginx's throughput only
// when the whole costs no more per call.
func writeBudget(b *strings.Builder, ix index) {
	gs := ix.groupsWhere(func(g group) bool { return g.kind == KindCall && len(noNaN(ix.ratio(g, Nginx, Sidecar, allPerOp))) > 0 })
	if len(gs) == 0 {
		return
	}
	b.WriteString("\n### Where the CPU went per call, nginx against the sidecar: medians, and ratios round by round (min–max)\n\n")
	b.WriteString("| era | conns | hop µs nginx / sidecar | upstream µs nginx / sidecar | wrk µs nginx / sidecar | all µs nginx / sidecar | all: nginx÷sidecar, round by round | throughput sidecar÷nginx |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	pair := func(g group, f func(Run) float64) string {
		return ix.median(g, Nginx, f) + " / " + ix.median(g, Sidecar, f)
	}
	for _, g := range gs {
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", g.era, g.conns,
			pair(g, cpuPerOp), pair(g, upstreamPerOp), pair(g, loadPerOp), pair(g, allPerOp),
			spreadOf(noNaN(ix.ratio(g, Nginx, Sidecar, allPerOp))).format(2, "×"),
			spreadOf(ix.ratio(g, Sidecar, Nginx, rps)).format(2, "×"))
	}
	b.WriteString("\nWhere every core is busy (the c=32 rows), the ratio of the totals is the throughput ratio the CPU allows.\n")
}

// writeBusyFloor sets the sidecar against the floor made to spend about
// its CPU, when that ran: if a relay that forwards exactly the bytes it
// receives delivers the sidecar's throughput at the sidecar's CPU, the
// throughput the sidecar loses to nginx is its CPU, not what it sends the
// upstream.
func writeBusyFloor(b *strings.Builder, ix index) {
	gs := ix.groupsWhere(func(g group) bool {
		return g.kind == KindCall && ix.runs[g][FloorBusy] != nil && ix.runs[g][Sidecar] != nil
	})
	if len(gs) == 0 {
		return
	}
	b.WriteString("\n### The floor at the sidecar's CPU (FLOOR_BUSY), round by round: median (min–max)\n\n")
	b.WriteString("| era | conns | hop µs floor / floor-busy / sidecar | upstream µs floor-busy / sidecar | CPU/op sidecar÷floor-busy | throughput sidecar÷floor-busy | throughput floor-busy÷nginx | throughput sidecar÷nginx |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range gs {
		fmt.Fprintf(b, "| %s | %d | %s / %s / %s | %s / %s | %s | %s | %s | %s |\n", g.era, g.conns,
			ix.median(g, Floor, cpuPerOp), ix.median(g, FloorBusy, cpuPerOp), ix.median(g, Sidecar, cpuPerOp),
			ix.median(g, FloorBusy, upstreamPerOp), ix.median(g, Sidecar, upstreamPerOp),
			spreadOf(ix.ratio(g, Sidecar, FloorBusy, cpuPerOp)).format(2, "×"),
			spreadOf(ix.ratio(g, Sidecar, FloorBusy, rps)).format(2, "×"),
			spreadOf(ix.ratio(g, FloorBusy, Nginx, rps)).format(2, "×"),
			spreadOf(ix.ratio(g, Sidecar, Nginx, rps)).format(2, "×"))
	}
	b.WriteString("\nWith the CPU per call matched (the first ratio near 1×), a throughput ratio near 1× says the sidecar's throughput is what its CPU allows: the bytes it sends the upstream cost the upstream no more than the floor's.\n")
}

func writeStrace(b *strings.Builder, ss []Strace) {
	if len(ss) == 0 {
		return
	}
	b.WriteString("\n### All system calls per request (`strace -c -f`, a separate untimed pass)\n\n")
	b.WriteString("| era | conns | target | requests | syscalls/request | busiest (calls/request) |\n")
	b.WriteString("|---|--:|---|--:|--:|---|\n")
	for _, s := range ss {
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %s | %s |\n", s.Era, s.Conns, s.Target, s.Requests,
			perRequest(s.Calls, s.Requests), topPerRequest(s.Top, s.Requests))
	}
}

func perRequest(n, requests float64) string {
	if requests <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", n/requests)
}

// topPerRequest turns "write:1200,read:900" into "write 1.20, read 0.90".
func topPerRequest(top string, requests float64) string {
	if top == "" || requests <= 0 {
		return "–"
	}
	var parts []string
	for item := range strings.SplitSeq(top, ",") {
		name, n, ok := strings.Cut(item, ":")
		var x float64
		if _, err := fmt.Sscanf(n, "%g", &x); !ok || err != nil {
			return top
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", name, x/requests))
	}
	return strings.Join(parts, ", ")
}

func writeBenches(b *strings.Builder, bs []GoBench) {
	if len(bs) == 0 {
		return
	}
	b.WriteString("\n### Go benchmark (client, hop and upstream in one process)\n\n")
	b.WriteString("| benchmark | allocs/op |\n|---|--:|\n")
	for _, x := range bs {
		fmt.Fprintf(b, "| %s | %.0f |\n", x.Name, x.Allocs)
	}
}

// benchHopAllocs is the allocations the sidecar adds per forwarded call in
// BenchmarkForward: its tools-call row through the sidecar less the one
// direct (client and upstream are the same in both).
func benchHopAllocs(bs []GoBench) (float64, bool) {
	var side, direct float64 = -1, -1
	for _, x := range bs {
		switch {
		case strings.HasSuffix(x.Name, "tools-call/"+Sidecar):
			side = x.Allocs
		case strings.HasSuffix(x.Name, "tools-call/"+Direct):
			direct = x.Allocs
		}
	}
	return side - direct, side >= 0 && direct >= 0
}

// target is one row of the target table.
type target struct {
	figure string
	now    Spread
	unit   string
	prec   int
	goal   float64
	atMost bool
	// plus prints the goal as "+N" (a difference) rather than "N×".
	plus bool
}

func writeTargets(b *strings.Builder, ix index, rec Records) {
	var rows []target
	for _, g := range ix.groups {
		if g.kind != KindCall {
			continue
		}
		if g.conns == 32 || g.conns == 1 {
			goal := 1.5
			if g.conns == 1 {
				goal = 2
			}
			rows = append(rows, target{figure: fmt.Sprintf("CPU per forwarded tools/call, %s c=%d, sidecar÷nginx", g.era, g.conns),
				now: spreadOf(ix.ratio(g, Sidecar, Nginx, cpuPerOp)), unit: "×", prec: 2, goal: goal, atMost: true})
		}
	}
	for _, g := range ix.groups {
		if g.kind == KindCall && g.conns == 32 {
			rows = append(rows, target{figure: fmt.Sprintf("throughput, %s c=32, sidecar÷nginx", g.era),
				now: spreadOf(ix.ratio(g, Sidecar, Nginx, rps)), unit: "×", prec: 2, goal: 1})
		}
	}
	// No target row from /proc/PID/io: it counts read(2) and write(2) but
	// not recvfrom(2) and sendto(2), with which nginx and the sidecar
	// (internal/rawsock) read and write their sockets. strace counts all.
	for _, s := range rec.Straces {
		if s.Target != Sidecar {
			continue
		}
		for _, n := range rec.Straces {
			if n.Target == Nginx && n.Era == s.Era && n.Conns == s.Conns && n.Requests > 0 && s.Requests > 0 {
				d := s.Calls/s.Requests - n.Calls/n.Requests
				rows = append(rows, target{figure: fmt.Sprintf("all syscalls per request (strace -c), %s c=%d, sidecar−nginx", s.Era, s.Conns),
					now: spreadOf([]float64{d}), prec: 2, goal: 2, atMost: true, plus: true})
			}
		}
	}
	for _, g := range ix.groups {
		if g.kind == KindCall && g.conns == 32 {
			rows = append(rows, target{figure: fmt.Sprintf("heap allocations per forwarded request (sidecar's go_memstats_mallocs_total), %s c=32", g.era),
				now: spreadOf(noNaN(ix.each(g, Sidecar, mallocsPerOp))), prec: 1, goal: 25, atMost: true})
		}
	}
	if n, ok := benchHopAllocs(rec.Benches); ok {
		rows = append(rows, target{figure: "heap allocations per forwarded request (BenchmarkForward tools-call, sidecar − direct)",
			now: spreadOf([]float64{n}), prec: 0, goal: 25, atMost: true})
	}
	for _, g := range ix.groups {
		if g.kind == KindSSE {
			rows = append(rows, target{figure: fmt.Sprintf("SSE: CPU per relayed event, %s c=%d, sidecar÷nginx", g.era, g.conns),
				now: spreadOf(ix.ratio(g, Sidecar, Nginx, cpuPerOp)), unit: "×", prec: 2, goal: 1.2, atMost: true})
		}
	}
	b.WriteString("\n### Targets for forwarding at nginx's cost: printed, never asserted\n\n")
	b.WriteString("| figure | now: median (min–max) | target | verdict |\n|---|--:|--:|---|\n")
	for _, r := range rows {
		cmp := "≥ "
		if r.atMost {
			cmp = "≤ "
		}
		goal := fmt.Sprintf("%s%g%s", cmp, r.goal, r.unit)
		if r.plus {
			goal = fmt.Sprintf("%s+%g", cmp, r.goal)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", r.figure, r.now.format(r.prec, r.unit), goal, Verdict(r.now, r.goal, r.atMost))
	}
	b.WriteString("\nPASS: the median meets the target. WITHIN-SPREAD: it misses by less than the spread over rounds (max − min): reported, not claimed. MISS: by more. One-pass figures (strace, the Go benchmark) have no spread.\n")
}
