package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
	"github.com/skills-sidecar/skills-sidecar/bench/stats"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The first skills/list page a new caller sees. The sidecar
// learns which catalog files the upstream serves per authorization context,
// so a caller with new credentials (a new bearer token, a junk cookie)
// costs the upstream one discovery (resources/list, whose first page is
// also the auth gate's verdict, and resources/templates/list), plus one
// read per file on the page that the upstream serves. The scenario runs
// its own go-sdk upstream in a process of its own (the skillsbench
// subcommand firstpage-upstream), behind middleware that counts the
// requests reaching it, and a
// sidecar (default flags: the auth gate and upstream-files on) in front
// of it, with a 100-skill × 5-file plugin: one page.
const (
	firstPageSkills = 100
	firstPageFiles  = 4 // besides SKILL.md
	// firstPageServed is how many skills' SKILL.md the "serves some"
	// upstream serves itself.
	firstPageServed = 5
	// firstPageCrowd is the number of concurrent new callers.
	firstPageCrowd = 100
	// firstPageLatency is the time the "slow" upstreams take before
	// answering any request: an upstream whose own work (an auth check
	// against an identity provider, a database) makes its round trip
	// longer than loopback's. On loopback the sidecar's and the upstream's
	// CPU time dominate a first page; against this latency the number of
	// round trips on its critical path does.
	firstPageLatency = 2 * time.Millisecond
	// harnessGCPercent is this process's collector target while the
	// scenario runs (see firstPageVariant).
	harnessGCPercent = 1000
)

// requestCounter counts the JSON-RPC requests reaching an upstream, and
// holds each for latency before the upstream answers it.
type requestCounter struct {
	mu      sync.Mutex
	by      map[string]int
	latency time.Duration
}

func (c *requestCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if m, err := rewrite.ParseMessage(body); err == nil && m.Kind == rewrite.KindRequest {
			c.mu.Lock()
			c.by[m.Method]++
			c.mu.Unlock()
		}
		if c.latency > 0 {
			time.Sleep(c.latency)
		}
		h.ServeHTTP(w, r)
	})
}

// snapshot returns the counts so far.
func (c *requestCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.by))
	for k, v := range c.by {
		out[k] = v
	}
	return out
}

// since describes the requests counted after before: the total, and the
// count of each method.
func since(before, after map[string]int) (int, string) {
	total := 0
	var parts []string
	for m, n := range after {
		if d := n - before[m]; d > 0 {
			total += d
			parts = append(parts, fmt.Sprintf("%s %d", m, d))
		}
	}
	slices.Sort(parts)
	return total, strings.Join(parts, ", ")
}

// writeFirstPagePlugin writes the scenario's plugin and returns its folder.
func writeFirstPagePlugin(dir string) (string, error) {
	root := filepath.Join(dir, "firstpage-plugin")
	for i := range firstPageSkills {
		name := fmt.Sprintf("f%03d", i)
		d := filepath.Join(root, "skills", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(firstPageSkillMD(name)), 0o644); err != nil {
			return "", err
		}
		for j := range firstPageFiles {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("ref%d.md", j)), []byte("# Reference "+name+"\n"), 0o644); err != nil {
				return "", err
			}
		}
	}
	return root, nil
}

func firstPageSkillMD(name string) string {
	return "---\nname: " + name + "\ndescription: Skill " + name + " of the first-page scenario.\n---\n# " + name + "\n"
}

// FirstPageOptions shapes the firstpage scenario's upstream.
type FirstPageOptions struct {
	// ServesSome makes the upstream serve the SKILL.md of firstPageServed
	// skills on the page as its own resources.
	ServesSome bool
	// Latency holds each request before the upstream answers it.
	Latency time.Duration
}

// firstPageUpstream is the scenario's go-sdk upstream (stateless for
// 2026-07-28 requests, with sessions for legacy ones): with an unrelated
// resource (so it declares resources and the sidecar must ask) and, with
// ServesSome, the SKILL.md of firstPageServed skills on the page as its own
// resources; each request is counted and held Latency first.
func firstPageUpstream(o FirstPageOptions) (http.Handler, *requestCounter) {
	s := mcp.NewServer(&mcp.Implementation{Name: "firstpage-upstream", Version: "v0.0.0"}, nil)
	s.AddResource(&mcp.Resource{URI: "bench://unrelated", Name: "unrelated"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "unrelated"}}}, nil
	})
	if o.ServesSome {
		for i := range firstPageServed {
			name := fmt.Sprintf("f%03d", i*firstPageSkills/firstPageServed)
			uri := "skill://" + name + "/SKILL.md"
			text := firstPageSkillMD(name) + "\nServed by the upstream.\n"
			s.AddResource(&mcp.Resource{URI: uri, Name: name, MIMEType: "text/markdown"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
			})
		}
	}
	c := &requestCounter{by: map[string]int{}, latency: o.Latency}
	get := func(*http.Request) *mcp.Server { return s }
	// Stateless for 2026-07-28 requests, with sessions for legacy ones
	// (the legacy row), as NewUpstream does.
	both := eraMux{
		stateful:  mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{SessionTimeout: 5 * time.Minute}),
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}),
	}
	return c.wrap(both), c
}

// ServeFirstPageUpstream serves the firstpage scenario's upstream until
// ctx ends: the skillsbench subcommand `firstpage-upstream`, run in a
// process of its own as any upstream of the sidecar is. Its stats address
// serves the allocation counter at /metrics and the requests counted so
// far at /counts, as a JSON object of method to count.
func ServeFirstPageUpstream(ctx context.Context, o ServeOptions, fo FirstPageOptions) error {
	h, c := firstPageUpstream(fo)
	stats := http.NewServeMux()
	stats.HandleFunc("/metrics", serveMallocs)
	stats.HandleFunc("/counts", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.snapshot())
	})
	return serveWith(ctx, o, h, stats)
}

// upstreamCounts fetches what a firstpage upstream has counted so far
// from its stats address (ServeFirstPageUpstream).
func upstreamCounts(ctx context.Context, client *http.Client, url string) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upstream counts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream counts: status %d", resp.StatusCode)
	}
	var out map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("upstream counts: %w", err)
	}
	return out, nil
}

func randomToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// firstPage measures the scenario for an upstream serving none and some of
// the catalog.
func firstPage(ctx context.Context, e *Env) []report.Row {
	var rows []report.Row
	row := func(variant string) report.Row {
		return report.Row{Scenario: "skills/list first page", Variant: variant, Target: report.Sidecar}
	}
	if e.SidecarBin == "" {
		r := row("new callers")
		r.Status = "unavailable: sidecar unavailable: " + e.SidecarErr
		return append(rows, r)
	}
	plugin, err := writeFirstPagePlugin(e.dir)
	if err != nil {
		r := row("new callers")
		r.Status = "failed: " + err.Error()
		return append(rows, r)
	}
	n := 50
	if e.opts.Short {
		n = 20
	}
	for _, latency := range []time.Duration{0, firstPageLatency} {
		for _, servesSome := range []bool{false, true} {
			label := "serves none"
			if servesSome {
				label = fmt.Sprintf("serves %d SKILL.md", firstPageServed)
			}
			if latency > 0 {
				label += fmt.Sprintf(", upstream +%v", latency)
			}
			rows = append(rows, e.firstPageVariant(ctx, plugin, servesSome, latency, label, n)...)
		}
	}
	return rows
}

func (e *Env) firstPageVariant(ctx context.Context, plugin string, servesSome bool, latency time.Duration, label string, n int) []report.Row {
	fail := func(err error) []report.Row {
		return []report.Row{{Scenario: "skills/list first page", Variant: label, Target: report.Sidecar, Status: "failed: " + err.Error()}}
	}
	// The upstream runs in a process of its own, as a sidecar's upstream
	// does: a round trip from another process (the sidecar's, or this
	// harness's direct one) wakes it, where a client in its own process
	// would find it running. The callers' garbage (each first page is a
	// 50 KB reply read into a new buffer) would start collections in the
	// middle of a timed phase: a collection before each timed phase and a
	// lax target during it keep the harness's own collector out of the
	// figures; the sidecar's collector runs as configured.
	defer debug.SetGCPercent(debug.SetGCPercent(harnessGCPercent))
	runtime.GC()
	upArgs := []string{"-latency", latency.String()}
	if servesSome {
		upArgs = append(upArgs, "-serves-some")
	}
	up, err := e.startGo(ctx, "firstpage-upstream", upArgs)
	if err != nil {
		return fail(err)
	}
	defer up.Proc.Stop(time.Second)
	upURL, countsURL := up.URL, strings.TrimSuffix(up.MetricsURL, "/metrics")+"/counts"
	p, addr, metricsURL, err := e.launchSidecar(ctx, []string{"--upstream", upURL, "--plugin-dir", plugin}, true)
	if err != nil {
		return fail(err)
	}
	defer p.Stop(time.Second)
	side := "http://" + addr + "/mcp"
	client := NewClient(firstPageCrowd)
	counts := func() (map[string]int, error) { return upstreamCounts(ctx, client, countsURL) }
	askWith := func(url string, hdr http.Header, body []byte) (time.Duration, error) {
		var buf bytes.Buffer
		start := time.Now()
		_, err := post(ctx, client, url, hdr, body, &buf)
		return time.Since(start), err
	}
	call := Call{Method: "skills/list"}
	body := call.Body(Modern)
	ask := func(url string, hdr http.Header) (time.Duration, error) {
		return askWith(url, hdr, body)
	}
	header := func(cred string) http.Header {
		h := call.Header(Modern, "")
		switch {
		case strings.HasPrefix(cred, "Bearer "):
			h.Set("Authorization", cred)
		case cred != "":
			h.Set("Cookie", cred)
		}
		return h
	}

	// One upstream round trip: the upstream's own resources/list, direct.
	rl := Call{Method: "resources/list"}
	var rtt []time.Duration
	for range n {
		var buf bytes.Buffer
		start := time.Now()
		if _, err := post(ctx, client, upURL, rl.Header(Modern, ""), rl.Body(Modern), &buf); err != nil {
			return fail(err)
		}
		rtt = append(rtt, time.Since(start))
	}
	roundTrip := stats.Summarize(rtt).P50

	// The same upstream requests a new caller's first page causes, sent
	// at once, direct: the listings, and the reads of the served files.
	// On two shared cores the upstream's own CPU for several requests at
	// once is part of any first page; this says how much.
	burstCalls := []Call{{Method: "resources/list"}, {Method: "resources/templates/list"}}
	if servesSome {
		for i := range firstPageServed {
			uri := fmt.Sprintf("skill://f%03d/SKILL.md", i*firstPageSkills/firstPageServed)
			burstCalls = append(burstCalls, Call{Method: "resources/read", Params: `{"uri":"` + uri + `"}`, Name: uri})
		}
	}
	runtime.GC()
	var bursts []time.Duration
	for range n {
		start := time.Now()
		errs := make([]error, len(burstCalls))
		var wg sync.WaitGroup
		for i, c := range burstCalls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf bytes.Buffer
				_, errs[i] = post(ctx, client, upURL, c.Header(Modern, c.Name), c.Body(Modern), &buf)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return fail(err)
			}
		}
		bursts = append(bursts, time.Since(start))
	}
	burst := stats.Summarize(bursts).P50

	var rows []report.Row
	// cpu is the sidecar's CPU time so far (user and system), to tell its
	// own cost of a first page from the upstream's and the machine's.
	cpu := func() time.Duration {
		u, _ := ReadUsage(p.PID())
		return u.CPU
	}
	// heap is what the sidecar has allocated so far and its garbage
	// collections: on two shared cores a collection's workers take the
	// cores the upstream needs for the page's requests.
	heap := func() heapUse {
		if metricsURL == "" {
			return heapUse{}
		}
		vs, err := scrapeValues(ctx, metricsURL, "go_memstats_alloc_bytes_total", "go_gc_duration_seconds_count")
		if err != nil {
			return heapUse{}
		}
		return heapUse{bytes: vs[0], gcs: vs[1]}
	}
	// A scrape allocates in the sidecar too, and each phase's figures
	// hold one: the median of five pairs of scrapes in a row, after three
	// that warm the sidecar's metrics handler up, says how much.
	for range 3 {
		heap()
	}
	var pairs []float64
	for range 5 {
		h := heap()
		pairs = append(pairs, heap().bytes-h.bytes)
	}
	slices.Sort(pairs)
	scrapeCost := pairs[len(pairs)/2]
	// handshake is a 2026-07-28 client's server/discover declaring the
	// skills extension, as a client about to list skills sends it first.
	discover := Call{Method: "server/discover"}
	handshakeBody := []byte(strings.Replace(string(discover.Body(Modern)), `"io.modelcontextprotocol/clientCapabilities":{}`,
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}`, 1))
	// A caller's request: its headers and body (a skills/list).
	type request struct {
		hdr  http.Header
		body []byte
		done func() // ends what opening began (a legacy session), or nil
	}
	// Ways a caller opens before its first page (not timed, but in the
	// counts): none, the modern handshake, the legacy one.
	plain := func(cred string) (request, error) { return request{header(cred), body, nil}, nil }
	modernShake := func(cred string) (request, error) {
		h := header(cred)
		h.Set("Mcp-Method", "server/discover")
		var buf bytes.Buffer
		if _, err := post(ctx, client, side, h, handshakeBody, &buf); err != nil {
			return request{}, err
		}
		return request{header(cred), body, nil}, nil
	}
	// legacyShake is a legacy client's initialize declaring the skills
	// extension and its notifications/initialized: the sidecar starts the
	// prefetch once the upstream has accepted the notification, and the
	// timed skills/list goes in that session.
	legacyShake := func(cred string) (request, error) {
		h := http.Header{}
		if cred != "" {
			h.Set("Authorization", cred)
		}
		id, err := OpenSessionAs(ctx, client, side, h, `{"extensions":{"io.modelcontextprotocol/skills":{}}}`)
		if err != nil {
			return request{}, err
		}
		lh := call.Header(Legacy, id)
		lh.Set("Authorization", cred)
		done := func() { CloseSessionAs(client, side, id, h) }
		return request{lh, call.Body(Legacy), done}, nil
	}
	measure := func(variant string, creds []string, open func(string) (request, error)) error {
		runtime.GC()
		before, err := counts()
		if err != nil {
			return err
		}
		cpu0, heap0 := cpu(), heap()
		var first []time.Duration
		reqs := make([]request, len(creds))
		for i, c := range creds {
			req, err := open(c)
			if err != nil {
				return err
			}
			reqs[i] = req
			d, err := askWith(side, req.hdr, req.body)
			if err != nil {
				return err
			}
			first = append(first, d)
		}
		after, err := counts()
		if err != nil {
			return err
		}
		total, detail := since(before, after)
		cpu1, heap1 := cpu(), heap()
		// The same callers again: their pages are warm.
		runtime.GC()
		var warm []time.Duration
		for _, req := range reqs {
			d, err := askWith(side, req.hdr, req.body)
			if err != nil {
				return err
			}
			warm = append(warm, d)
		}
		row := firstPageRow(label+", "+variant, first, warm, roundTrip, burst, len(burstCalls), total, len(creds), detail)
		// CPU time is counted in 10 ms ticks and a scrape's allocation
		// varies by tens of KiB: one caller's page is below both. The
		// first pages' figures include the opening (a handshake).
		if len(creds) >= 20 {
			firstCPU, warmCPU := micros(cpu1-cpu0)/float64(len(creds)), micros(cpu()-cpu1)/float64(len(creds))
			row.CPUMicrosPerOp = &firstCPU
			row.Note += fmt.Sprintf("; sidecar CPU per first page %.0f µs, per warm page %.0f µs", firstCPU, warmCPU)
			row.Note += heapNote(heap0, heap1, heap(), scrapeCost, len(creds))
		}
		rows = append(rows, row)
		for _, req := range reqs { // after the figures: not part of a page
			if req.done != nil {
				req.done()
			}
		}
		return nil
	}
	bearer, cookies := make([]string, n), make([]string, n)
	for i := range n {
		bearer[i], cookies[i] = "Bearer "+randomToken(), "session="+randomToken()
	}
	// No credentials: every such caller from one address is one context,
	// so only the first is new.
	if err := measure("no credentials c=1", []string{""}, plain); err != nil {
		return fail(err)
	}
	if err := measure("new bearer token c=1", bearer, plain); err != nil {
		return fail(err)
	}
	if err := measure("junk cookie c=1", cookies, plain); err != nil {
		return fail(err)
	}
	// The same, each caller first sending server/discover declaring the
	// skills extension (not timed): the sidecar starts the discovery as
	// the handshake passes (methods' prefetch), and the timed first page
	// finds it done or under way.
	shaken, legacy := make([]string, n), make([]string, n)
	for i := range n {
		shaken[i], legacy[i] = "Bearer "+randomToken(), "Bearer "+randomToken()
	}
	if err := measure("new bearer token after a server/discover declaring skills c=1", shaken, modernShake); err != nil {
		return fail(err)
	}
	// A legacy client declaring the extension in its initialize: the
	// same prefetch, started at its notifications/initialized.
	if err := measure("new bearer token, legacy session after an initialize declaring skills c=1", legacy, legacyShake); err != nil {
		return fail(err)
	}

	// A crowd of new callers at once.
	crowd := make([]string, firstPageCrowd)
	for i := range crowd {
		crowd[i] = "session=" + randomToken()
	}
	runtime.GC()
	before, err := counts()
	if err != nil {
		return append(rows, fail(err)...)
	}
	cpu0, heap0 := cpu(), heap()
	first := make([]time.Duration, len(crowd))
	errs := make([]error, len(crowd))
	var wg sync.WaitGroup
	for i, c := range crowd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := ask(side, header(c))
			first[i], errs[i] = d, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return append(rows, fail(err)...)
		}
	}
	after, err := counts()
	if err != nil {
		return append(rows, fail(err)...)
	}
	total, detail := since(before, after)
	cpu1, heap1 := cpu(), heap()
	runtime.GC()
	warm := make([]time.Duration, len(crowd))
	for i, c := range crowd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := ask(side, header(c))
			warm[i], errs[i] = d, err
		}()
	}
	wg.Wait()
	row := firstPageRow(fmt.Sprintf("%s, junk cookie c=%d", label, firstPageCrowd), first, warm, roundTrip, burst, len(burstCalls), total, len(crowd), detail)
	firstCPU, warmCPU := micros(cpu1-cpu0)/float64(len(crowd)), micros(cpu()-cpu1)/float64(len(crowd))
	row.CPUMicrosPerOp = &firstCPU
	row.Note += fmt.Sprintf("; sidecar CPU per first page %.0f µs, per warm page %.0f µs", firstCPU, warmCPU)
	row.Note += heapNote(heap0, heap1, heap(), scrapeCost, len(crowd))
	return append(rows, row)
}

// heapUse is the sidecar's go_memstats_alloc_bytes_total and
// go_gc_duration_seconds_count at one moment.
type heapUse struct{ bytes, gcs float64 }

// heapNote describes the sidecar's allocation and collections per first
// page (between first and warm) and per warm page (warm to after), of n
// callers, less the scrape each phase's figures include (scrape bytes);
// nothing when the sidecar had no metrics endpoint.
func heapNote(first, warm, after heapUse, scrape float64, n int) string {
	if first.bytes == 0 || n == 0 {
		return ""
	}
	f := float64(n)
	return fmt.Sprintf("; sidecar allocated %.0f KiB per first page, %.0f KiB per warm page; %.0f garbage collections during the %d first pages, %.0f during the warm ones",
		(warm.bytes-first.bytes-scrape)/1024/f, (after.bytes-warm.bytes-scrape)/1024/f, warm.gcs-first.gcs, n, after.gcs-warm.gcs)
}

// firstPageRow reports new callers' first pages: latency percentiles, and
// in the note the upstream requests per caller, the warm page's p50, the
// upstream's round trip and its time for the page's requests at once
// (burst, of burstN requests).
func firstPageRow(variant string, first, warm []time.Duration, roundTrip, burst time.Duration, burstN, requests, callers int, detail string) report.Row {
	f, w := stats.Summarize(first), stats.Summarize(warm)
	perCaller := float64(requests) / float64(callers)
	rt := micros(roundTrip)
	extra := micros(f.P50) - micros(w.P50)
	verdict := "target (≤ 1.20×) met"
	if extra > 1.2*rt {
		verdict = "target (≤ 1.20×) not met"
	}
	return report.Row{
		Scenario: "skills/list first page", Variant: variant, Target: report.Sidecar, Status: "ok",
		P50Micros: micros(f.P50), P99Micros: micros(f.P99), Samples: int64(f.N),
		Note: fmt.Sprintf("%.2f upstream requests per new caller (%s); warm page p50 %.0f µs; first − warm %.0f µs, %.2f× one upstream round trip (%.0f µs), %s; %.2f× the upstream's time for the page's %d requests at once, direct (%.0f µs)",
			perCaller, detail, micros(w.P50), extra, extra/rt, rt, verdict, extra/micros(burst), burstN, micros(burst)),
		Extra: map[string]float64{"upstream_requests_per_caller": perCaller, "warm_p50_us": micros(w.P50), "round_trip_p50_us": rt, "burst_p50_us": micros(burst)},
	}
}
