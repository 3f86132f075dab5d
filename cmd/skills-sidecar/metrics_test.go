package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// The wire constants of the modern era, spelled out here rather than
// borrowed from the code under test.
const (
	scrapeVersion = "2026-07-28"
	goodToken     = "good"
	badToken      = "bad"
	dropToken     = "drop" // the upstream closes the connection: the gate cannot ask
)

// scrapeUpstream is a go-sdk server behind a bearer-token check. It serves
// skill://notes/SKILL.md itself (so the sidecar probes and digests it) with
// the text in skillText, and an echo tool. A request with badToken gets a
// 401; one with dropToken has its connection closed without a reply.
func scrapeUpstream(t *testing.T, skillText *atomic.Value) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "skill://notes/SKILL.md", Name: "notes", MIMEType: "text/markdown"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: skillText.Load().(string)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil
		})
	h := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer " + goodToken:
			h.ServeHTTP(w, r)
		case "Bearer " + dropToken:
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = c.Close()
			}
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="upstream"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_token"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// mcpCall posts one modern-era request with a bearer token and returns the
// HTTP status, draining the body.
func mcpCall(t *testing.T, endpoint, token, method string, params map[string]any) int {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": scrapeVersion, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", scrapeVersion)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if uri, ok := params["uri"].(string); ok {
		req.Header.Set("Mcp-Name", uri)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("%s: read reply: %v", method, err)
	}
	return resp.StatusCode
}

// scrape GETs /metrics over HTTP and parses the text exposition.
func scrape(t *testing.T, metricsAddr string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape = HTTP %d %q, want 200 text/plain", resp.StatusCode, ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return mfs
}

// series is one expected sample: a family, its exact label set, and its
// value (a histogram's sample count).
type series struct {
	name   string
	labels map[string]string
	want   float64
}

// labelSets lists a family's series as "k=v,…" strings, for failure messages.
func labelSets(mfs map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range mfs[name].GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
		out = append(out, strings.Join(kv, ","))
	}
	sort.Strings(out)
	return out
}

// seriesName spells a series the way the exposition does: name{k="v",…}.
func seriesName(name string, labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	var b strings.Builder
	b.WriteString(name + "{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteString("}")
	return b.String()
}

func checkSeries(t *testing.T, mfs map[string]*dto.MetricFamily, want []series) {
	t.Helper()
	for _, s := range want {
		got, ok := metricstest.Sample(mfs, s.name, s.labels)
		if !ok {
			t.Errorf("scrape has no %s; the family's series: %q", seriesName(s.name, s.labels), labelSets(mfs, s.name))
			continue
		}
		if got != s.want {
			t.Errorf("%s = %v, want %v", seriesName(s.name, s.labels), got, s.want)
		}
	}
}

// reloadLogs counts the reloads the sidecar logged (JSON lines on stderr):
// the watcher's own account, independent of the metrics.
func reloadLogs(t *testing.T, log string) (loaded, failed int, lastSkills float64) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		var e struct {
			Msg    string  `json:"msg"`
			Skills float64 `json:"skills"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch e.Msg {
		case "plugin loaded":
			loaded, lastSkills = loaded+1, e.Skills
		case "plugin reload failed: keeping the last good catalog":
			failed++
		}
	}
	return loaded, failed, lastSkills
}

// waitLog waits (waitFor) until the log shows what cond asks for.
func waitLog(t *testing.T, what string, errOut *syncBuffer, cond func(loaded, failed int, skills float64) bool) {
	t.Helper()
	waitFor(t, what, func() bool { return cond(reloadLogs(t, errOut.String())) }, func() string { return "log\n" + errOut.String() })
}

// unixSeconds is t as the float a timestamp gauge holds.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// startScraped runs the sidecar as main does, in front of upstreamURL with
// the plugin folder root, until the test ends; it returns the MCP endpoint,
// the metrics listener's address and the sidecar's JSON log. The caches are
// long-lived so that what the test counts does not depend on its speed.
func startScraped(t *testing.T, upstreamURL, root string) (endpoint, metricsAddr string, log *syncBuffer) {
	t.Helper()
	s := startRun(t, true, "--upstream", upstreamURL, "--plugin-dir", root, "--log-format", "json",
		"--poll-interval", "100ms", "--auth-cache-ttl", "10m", "--upstream-files-ttl", "10m")
	eventually(t, "/healthz", 200, func() int { return status("http://" + s.maddr + "/healthz") })
	return s.url, s.maddr, s.errOut
}

// scrapeSettled scrapes between two readings of the log that agree on the
// reloads logged, so that no reload lands between the count and the scrape.
func scrapeSettled(t *testing.T, metricsAddr string, log *syncBuffer) (mfs map[string]*dto.MetricFamily, loaded, failed int) {
	t.Helper()
	waitFor(t, "the watcher to stop reloading", func() bool {
		l1, f1, _ := reloadLogs(t, log.String())
		mfs = scrape(t, metricsAddr)
		l2, f2, _ := reloadLogs(t, log.String())
		loaded, failed = l2, f2
		return l1 == l2 && f1 == f2
	}, nil)
	return mfs, loaded, failed
}

// unchecked returns the skills_sidecar_* families of mfs that want does not
// name, other than those in also.
func unchecked(mfs map[string]*dto.MetricFamily, want []series, also ...string) []string {
	checked := map[string]bool{}
	for _, n := range also {
		checked[n] = true
	}
	for _, s := range want {
		checked[s.name] = true
	}
	var out []string
	for name := range mfs {
		if strings.HasPrefix(name, "skills_sidecar_") && !checked[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// undocumented returns the families of a scrape that docs/operations.md
// does not name: each must be there in backquotes, by its name or by a
// prefix written as `prefix_*` (the Go and process collectors' families).
// It reads the scrape, not the metrics package: /metrics also serves
// families registered outside it.
func undocumented(t *testing.T, mfs map[string]*dto.MetricFamily) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var prefixes []string
	for _, m := range regexp.MustCompile("`([a-z_]+_)\\*`").FindAllStringSubmatch(doc, -1) {
		prefixes = append(prefixes, m[1])
	}
	var out []string
	for name := range mfs {
		named := strings.Contains(doc, "`"+name+"`")
		if !strings.HasPrefix(name, "skills_sidecar_") { // the sidecar's own, each by its name
			for _, p := range prefixes {
				named = named || strings.HasPrefix(name, p)
			}
		}
		if !named {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// phaseOneWant is what TestScrapeAfterTraffic's first phase must leave on
// the scrape, derived from the traffic it sends.
func phaseOneWant(upText1, upText2 string) []series {
	local, upstream := "local", "upstream"
	req := func(method, route, outcome string, n float64) []series {
		l := map[string]string{"method": method, "route": route, "outcome": outcome}
		return []series{{"skills_sidecar_requests_total", l, n}, {"skills_sidecar_request_duration_seconds", l, n}}
	}
	var want []series
	for _, r := range [][]series{
		req("server/discover", upstream, "2xx", 1),
		req("tools/call", upstream, "2xx", 1),
		req("skills/list", local, "2xx", 2),
		req("skills/list", local, "4xx", 1),
		req("skills/list", local, "5xx", 1),
		req("agents/list", local, "2xx", 1),
		req("resources/read", local, "2xx", 1),
		req("resources/read", upstream, "2xx", 2),
	} {
		want = append(want, r...)
	}
	want = append(want,
		series{"skills_sidecar_upstream_response_seconds", map[string]string{"method": "server/discover"}, 1},
		series{"skills_sidecar_upstream_response_seconds", map[string]string{"method": "tools/call"}, 1},
		series{"skills_sidecar_upstream_response_seconds", map[string]string{"method": "resources/read"}, 2},
		series{"skills_sidecar_declarations_injected_total", map[string]string{"era": "modern"}, 1},
		series{"skills_sidecar_declarations_injected_total", map[string]string{"era": "legacy"}, 0},
		series{"skills_sidecar_active_streams", map[string]string{}, 0},
		series{"skills_sidecar_catalog_skills", map[string]string{}, 1},
		series{"skills_sidecar_catalog_agents", map[string]string{}, 2},
		series{"skills_sidecar_catalog_problems", map[string]string{"kind": "description", "severity": "skip"}, 1},
		series{"skills_sidecar_catalog_frontmatter_ambiguous", map[string]string{"severity": "skip"}, 0},
		series{"skills_sidecar_catalog_frontmatter_ambiguous", map[string]string{"severity": "warn"}, 0},
		series{"skills_sidecar_catalog_reloads_total", map[string]string{"outcome": "success"}, 1}, // the initial load
		series{"skills_sidecar_catalog_reloads_total", map[string]string{"outcome": "failure"}, 0},
		series{"skills_sidecar_catalog_dropped_total", map[string]string{"kind": "skill"}, 0},
		series{"skills_sidecar_catalog_dropped_total", map[string]string{"kind": "agent"}, 0},
		series{"skills_sidecar_digest_refreshes_total", map[string]string{}, 1}, // notes' SKILL.md once; extra.txt, which the upstream does not list, never
		series{"skills_sidecar_digest_mismatches_total", map[string]string{}, 1},
		// The probe hashed the first text; each forwarded read hashed the second.
		series{"skills_sidecar_hashed_bytes_total", map[string]string{}, float64(len(upText1) + 2*len(upText2))},
		series{"skills_sidecar_auth_verdicts_total", map[string]string{"verdict": "allowed"}, 4},
		series{"skills_sidecar_auth_verdicts_total", map[string]string{"verdict": "refused"}, 1},
		series{"skills_sidecar_auth_verdicts_total", map[string]string{"verdict": "error"}, 1},
		series{"skills_sidecar_auth_cache_hits_total", map[string]string{}, 3},
		series{"skills_sidecar_build_info", map[string]string{"version": version, "goversion": runtime.Version()}, 1},
		// The upstream refuses the anonymous era probes (401), so its eras
		// stay unknown and nothing is bridged.
		series{"skills_sidecar_upstream_era", map[string]string{"era": "unknown"}, 1},
		series{"skills_sidecar_upstream_era", map[string]string{"era": "legacy"}, 0},
		series{"skills_sidecar_upstream_era", map[string]string{"era": "modern"}, 0},
		series{"skills_sidecar_upstream_era", map[string]string{"era": "dual"}, 0},
		series{"skills_sidecar_bridge_sessions", map[string]string{}, 0},
		// The upstream is a URL: no stdio process ever ran.
		series{"skills_sidecar_stdio_processes", map[string]string{}, 0},
		series{"skills_sidecar_stdio_restarts_total", map[string]string{}, 0},
		// host-compat is off.
		series{"skills_sidecar_host_compat_collisions_total", map[string]string{"kind": "prompt"}, 0},
		series{"skills_sidecar_host_compat_collisions_total", map[string]string{"kind": "tool"}, 0},
	)
	for _, e := range []string{"skipped_line", "line_too_long", "dropped_message", "unmatched_reply", "timeout", "refused", "evicted", "stderr_dropped"} {
		want = append(want, series{"skills_sidecar_stdio_events_total", map[string]string{"event": e}, 0})
	}
	// Every table callers share exists, and every bound of one session's
	// own but a stdio process's; none refused anyone.
	for _, table := range []string{"bridge_sessions", "bridge_listens", "bridge_pending", "bridge_streams", "bridge_subscriptions", "bridge_revocations", "notify_subscriptions", "notify_streams",
		"bridge_session_streams", "bridge_session_subscriptions", "notify_session_subscriptions", "notify_session_streams"} {
		for _, refusal := range []string{"share", "full"} {
			want = append(want, series{"skills_sidecar_caller_refusals_total", map[string]string{"table": table, "refusal": refusal}, 0})
		}
	}
	// No stream was open: the sidecar sent no notification of its own.
	for _, method := range []string{"resources/list_changed", "agents/list_changed", "resources/updated", "prompts/list_changed", "tools/list_changed"} {
		for _, outcome := range []string{"sent", "coalesced"} {
			want = append(want, series{"skills_sidecar_notifications_total", map[string]string{"method": method, "outcome": outcome}, 0})
		}
	}
	return want
}

// breakAndRestore makes the plugin folder unreadable until a reload has
// failed, then puts it back and waits for it to load; it returns when the
// folder was put back.
func breakAndRestore(t *testing.T, root string, log *syncBuffer) (restored time.Time) {
	t.Helper()
	if err := os.Rename(root, root+".away"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, "the missing folder to fail a reload", log, func(_, failed int, _ float64) bool { return failed > 0 })
	loadedBefore, _, _ := reloadLogs(t, log.String())
	restored = time.Now()
	if err := os.Rename(root+".away", root); err != nil {
		t.Fatal(err)
	}
	waitLog(t, "the restored folder to load", log, func(loaded, _ int, _ float64) bool { return loaded > loadedBefore })
	return restored
}

// TestScrapeAfterTraffic runs the real sidecar (run, as main does) in front
// of a go-sdk upstream that requires a bearer token and serves one skill
// file itself, with a plugin folder in a temp dir, the auth gate and the
// upstream-files overlay on (their defaults). It drives scripted traffic,
// rewrites and breaks the plugin folder, and after each phase scrapes
// /metrics over HTTP, parses the text with expfmt, and checks every
// skills_sidecar_* family against what the test did.
func TestScrapeAfterTraffic(t *testing.T) {
	t.Parallel()
	upText1 := "---\nname: notes\ndescription: Take notes, as the upstream serves them.\n---\n# Notes\n"
	upText2 := upText1 + "\nThe upstream changed this file after it was listed.\n"
	var skillText atomic.Value
	skillText.Store(upText1)
	upstreamURL := scrapeUpstream(t, &skillText)

	base := t.TempDir()
	root := filepath.Join(base, "plugin")
	sidecartest.WriteTree(t, root, map[string]string{
		"skills/notes/SKILL.md":  "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n",
		"skills/notes/extra.txt": "only on disk\n",
		"skills/broken/SKILL.md": "---\nname: broken\n---\n# Broken\n", // skipped: no description
		"agents/helper.md":       "---\nname: helper\ndescription: Helps.\nskills: [notes]\n---\nHelp.\n",
		"agents/scribe.md":       "---\nname: scribe\ndescription: Writes.\n---\nWrite.\n",
	})

	started := time.Now()
	endpoint, maddr, errOut := startScraped(t, upstreamURL, root)
	call := func(token, method string, params map[string]any, want int) {
		t.Helper()
		if got := mcpCall(t, endpoint, token, method, params); got != want {
			t.Fatalf("%s with token %q = HTTP %d, want %d; stderr %s", method, token, got, want, errOut.String())
		}
	}

	// Phase 1: traffic against the catalog as first loaded.
	call(goodToken, "server/discover", nil, 200)                                                      // forwarded; declaration spliced
	call(goodToken, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}}, 200) // forwarded
	// The refused and the unreachable caller come before any discovery has
	// learned what the upstream serves, so no guessed read (whose count
	// would depend on how soon the refusal cancels it) goes beside theirs.
	call(badToken, "skills/list", nil, 401)                                                  // gate: the upstream refuses
	call(dropToken, "skills/list", nil, 502)                                                 // gate: the upstream cannot be asked
	call(goodToken, "skills/list", nil, 200)                                                 // the discovery's first listing admits; notes' SKILL.md is read
	call(goodToken, "skills/list", nil, 200)                                                 // gate cache hit; overlay cached
	call(goodToken, "agents/list", nil, 200)                                                 // gate cache hit
	call(goodToken, "resources/read", map[string]any{"uri": "skill://notes/extra.txt"}, 200) // the sidecar's file: gate cache hit
	skillText.Store(upText2)
	call(goodToken, "resources/read", map[string]any{"uri": "skill://notes/SKILL.md"}, 200) // forwarded; bytes differ: a mismatch
	call(goodToken, "resources/read", map[string]any{"uri": "skill://notes/SKILL.md"}, 200) // forwarded; same bytes again

	mfs := scrape(t, maddr)
	want := phaseOneWant(upText1, upText2)
	checkSeries(t, mfs, want)
	if n := len(mfs["skills_sidecar_catalog_problems"].GetMetric()); n != 1 {
		t.Errorf("catalog_problems has %d series, want 1: %q", n, labelSets(mfs, "skills_sidecar_catalog_problems"))
	}
	firstReload, _ := metricstest.Sample(mfs, "skills_sidecar_catalog_last_reload_timestamp_seconds", map[string]string{})
	if lo, hi := unixSeconds(started)-1e-3, unixSeconds(time.Now()); firstReload < lo || firstReload > hi {
		t.Errorf("catalog_last_reload_timestamp_seconds = %f, want between the start of run (%f) and now (%f)", firstReload, lo, hi)
	}
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("scrape has no %s: the Go and process collectors are not registered", name)
		}
	}
	if extra := unchecked(mfs, want, "skills_sidecar_catalog_last_reload_timestamp_seconds"); len(extra) > 0 {
		t.Errorf("scrape has families this test does not check: %q", extra)
	}
	if missing := undocumented(t, mfs); len(missing) > 0 {
		t.Errorf("/metrics serves families docs/operations.md does not name: %q", missing)
	}

	// Phase 2: the folder is rewritten (broken gets its description, a
	// second agent names a skill nobody serves), then made unreadable and
	// restored.
	sidecartest.WriteTree(t, root, map[string]string{
		"skills/broken/SKILL.md": "---\nname: broken\ndescription: Fixed.\n---\n# Broken\n",
		"agents/other.md":        "---\nname: other\ndescription: Other.\nskills: [ghost]\n---\nHelp.\n",
	})
	waitLog(t, "the rewrite to load", errOut, func(_, _ int, skills float64) bool { return skills == 2 })
	restored := breakAndRestore(t, root, errOut)

	// The watcher may reload more than once per change (a new folder's watch
	// makes it look again); its log is its own account of how often, and the
	// counters must match it.
	mfs, loaded, failed := scrapeSettled(t, maddr, errOut)
	t.Logf("the watcher logged %d loads and %d failed reloads", loaded, failed)
	if loaded < 3 || failed < 1 {
		t.Fatalf("logged %d loads and %d failures, want at least 3 (initial, rewrite, restore) and 1", loaded, failed)
	}
	checkSeries(t, mfs, []series{
		{"skills_sidecar_catalog_skills", map[string]string{}, 2},
		{"skills_sidecar_catalog_agents", map[string]string{}, 3},
		{"skills_sidecar_catalog_problems", map[string]string{"kind": "reference", "severity": "warn"}, 1},
		{"skills_sidecar_catalog_reloads_total", map[string]string{"outcome": "success"}, float64(loaded)},
		{"skills_sidecar_catalog_reloads_total", map[string]string{"outcome": "failure"}, float64(failed)},
	})
	if n := len(mfs["skills_sidecar_catalog_problems"].GetMetric()); n != 1 {
		t.Errorf("catalog_problems after the rewrite has %d series, want 1 (the fixed skill's gone): %q", n, labelSets(mfs, "skills_sidecar_catalog_problems"))
	}
	last, _ := metricstest.Sample(mfs, "skills_sidecar_catalog_last_reload_timestamp_seconds", map[string]string{})
	if lo, hi := unixSeconds(restored)-1e-3, unixSeconds(time.Now()); last < lo || last > hi {
		t.Errorf("catalog_last_reload_timestamp_seconds after the restore = %f, want between the restore (%f) and now (%f)", last, lo, hi)
	}
	// Nothing served went away in phase 2: broken came back, an agent was added.
	checkSeries(t, mfs, []series{
		{"skills_sidecar_catalog_dropped_total", map[string]string{"kind": "skill"}, 0},
		{"skills_sidecar_catalog_dropped_total", map[string]string{"kind": "agent"}, 0},
	})

	// Phase 3: an update breaks a skill that was served and removes an
	// agent. The reload succeeds; the dropped counter is what moves.
	sidecartest.WriteTree(t, root, map[string]string{"skills/broken/SKILL.md": "---\nname: broken\n---\n# Broken again\n"})
	if err := os.Remove(filepath.Join(root, "agents", "scribe.md")); err != nil {
		t.Fatal(err)
	}
	var s, a float64
	waitFor(t, "catalog_dropped_total to count the broken skill and the removed agent", func() bool {
		mfs = scrape(t, maddr)
		s, _ = metricstest.Sample(mfs, "skills_sidecar_catalog_dropped_total", map[string]string{"kind": "skill"})
		a, _ = metricstest.Sample(mfs, "skills_sidecar_catalog_dropped_total", map[string]string{"kind": "agent"})
		return s == 1 && a == 1
	}, func() string {
		return fmt.Sprintf("catalog_dropped_total = %v skills, %v agents after breaking one of each, want 1 and 1; log:\n%s", s, a, errOut.String())
	})
	if !strings.Contains(errOut.String(), `"msg":"plugin reload stopped serving items","skills":["skill://broken/SKILL.md"]`) {
		t.Errorf("no warn line naming the dropped skill:\n%s", errOut.String())
	}
}
