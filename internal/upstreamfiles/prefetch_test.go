package upstreamfiles_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// The prefetch at the handshake (prefetch.go): a 2026-07-28 client that
// declares the skills extension in its server/discover has its context's
// discovery and first page's reads started as the handshake passes, so its
// first skills/list finds them done.

// discoverAs sends a 2026-07-28 server/discover with the bearer token,
// declaring the skills extension or not, and returns the HTTP status.
func discoverAs(t *testing.T, side, token string, declares bool) int {
	t.Helper()
	status, err := sendDiscover(side, "Authorization", "Bearer "+token, declares)
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// sendDiscover sends a 2026-07-28 server/discover with the credential
// header name set to value, declaring the skills extension or not, and
// returns the HTTP status; from any goroutine.
func sendDiscover(side, name, value string, declares bool) (int, error) {
	caps := `{}`
	if declares {
		caps = `{"extensions":{"io.modelcontextprotocol/skills":{}}}`
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	req, _ := http.NewRequest(http.MethodPost, side, strings.NewReader(body))
	for k, v := range map[string]string{name: value, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// waitFor waits (sidecartest.WaitFor, a minute's hang guard) until cond
// holds: the prefetch runs in the background.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	sidecartest.WaitFor(t, time.Minute, cond, what)
}

// TestPrefetchAtHandshake: with the gate on, a client declaring the
// extension costs its discovery and the read of the served file as its
// server/discover passes; its first skills/list then costs the upstream
// nothing (no listing, no probe, no read) and publishes the upstream's
// bytes. A client that does not declare it costs nothing at the handshake.
func TestPrefetchAtHandshake(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a", "b"}, 1)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	side := guessSidecar(t, upURL, snap, true)
	uri := "skill://a/SKILL.md"

	if st := discoverAs(t, side, "plain", false); st != http.StatusOK {
		t.Fatalf("server/discover: HTTP %d", st)
	}
	time.Sleep(100 * time.Millisecond) // a prefetch, if one wrongly started, reaches the upstream
	if n := g.get("resources/list Bearer plain"); n != 0 {
		t.Errorf("a client not declaring the extension cost %d resources/list at its handshake, want 0", n)
	}

	if st := discoverAs(t, side, "skills", true); st != http.StatusOK {
		t.Fatalf("server/discover: HTTP %d", st)
	}
	waitFor(t, "the prefetch's read", func() bool { return g.get("resources/read Bearer skills "+uri) == 1 })
	listed := g.get("resources/list Bearer skills")
	if listed != 1 {
		t.Errorf("the handshake cost %d resources/list, want 1", listed)
	}
	res, err := callAs(side, map[string]string{"Authorization": "Bearer skills"}, "skills/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := publishedDigest(t, skillsOf(t, res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
		t.Errorf("%s published %s, want the upstream's bytes' %s", uri, d, digestOf(lfServed(snap, uri)))
	}
	if n := g.get("resources/list Bearer skills"); n != listed {
		t.Errorf("the first skills/list after the prefetch sent resources/list again (%d in all)", n)
	}
	if n := g.get("resources/read Bearer skills " + uri); n != 1 {
		t.Errorf("%s read %d times, want once (by the prefetch)", uri, n)
	}
	if n := g.get("server/discover Bearer skills"); n != 1 {
		t.Errorf("server/discover with the token reached the upstream %d times, want once (the client's own): the first page sent a probe", n)
	}
}

// TestPrefetchRefused: the upstream refuses the handshake's token. The
// prefetch's listing is refused too and nothing of it is kept: admitted
// later, the same token's first page runs its own discovery.
func TestPrefetchRefused(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	side := guessSidecar(t, upURL, snap, true)
	g.refuse("late")
	if st := discoverAs(t, side, "late", true); st != http.StatusUnauthorized {
		t.Fatalf("refused server/discover: HTTP %d, want the upstream's 401", st)
	}
	waitFor(t, "the prefetch's listing", func() bool { return g.get("resources/list Bearer late") == 1 })
	time.Sleep(50 * time.Millisecond) // its refusal is handled
	g.setEdit(nil)
	if _, err := callAs(side, map[string]string{"Authorization": "Bearer late"}, "skills/list", nil); err != nil {
		t.Fatal(err)
	}
	if n := g.get("resources/list Bearer late"); n != 2 {
		t.Errorf("resources/list with the token: %d, want 2 (the refused prefetch's, and the admitted page's own)", n)
	}
}

// TestPrefetchFloodBounded: many handshakes with junk cookies at once start
// at most one discovery each, and never more than 16 listings are in flight
// at the upstream.
func TestPrefetchFloodBounded(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	side := guessSidecar(t, upURL, snap, false)
	var mu = make(chan struct{}, 1)
	inFlight, most := 0, 0
	g.mu.Lock()
	g.edit = func(m rewrite.Message, _ http.ResponseWriter, _ *http.Request) bool {
		if m.Method == "resources/list" {
			mu <- struct{}{}
			inFlight++
			most = max(most, inFlight)
			<-mu
			time.Sleep(20 * time.Millisecond)
			mu <- struct{}{}
			inFlight--
			<-mu
		}
		return false
	}
	g.mu.Unlock()
	const n = 40
	done := make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = sendDiscover(side, "Cookie", junkCookie(), true) // its answer is not what is measured
		}()
	}
	for range n {
		<-done
	}
	time.Sleep(500 * time.Millisecond) // the prefetches end
	total := 0
	g.mu.Lock()
	for k, v := range g.count {
		if strings.HasPrefix(k, "resources/list ") {
			total += v
		}
	}
	g.mu.Unlock()
	mu <- struct{}{}
	peak := most
	<-mu
	if total > n || total == 0 {
		t.Errorf("%d handshakes caused %d resources/list, want between 1 and %d (one discovery each at most)", n, total, n)
	}
	if peak > 16 {
		t.Errorf("%d resources/list in flight at once, want at most 16", peak)
	}
}

// TestPrefetchOutOfTimeIsNoAnswer: a prefetch that runs out of time while
// the client's skills/list waits on its discovery is not that page's
// answer: the page runs a discovery of its own and is answered, not failed
// with the prefetch's timeout. (Not parallel: it shortens the prefetch's
// bound for the process.)
func TestPrefetchOutOfTimeIsNoAnswer(t *testing.T) {
	defer upstreamfiles.SetPrefetchTimeout(200 * time.Millisecond)()
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"}) // it declares resources
	side := guessSidecar(t, upURL, snap, true)
	var slowOnce sync.Once
	g.setEdit(func(m rewrite.Message, _ http.ResponseWriter, r *http.Request) bool {
		if m.Method == "resources/templates/list" && r.Header.Get("Authorization") == "Bearer slow" {
			slow := false
			slowOnce.Do(func() { slow = true })
			if slow { // the prefetch's: longer than its bound
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}
		}
		return false
	})
	if st := discoverAs(t, side, "slow", true); st != http.StatusOK {
		t.Fatalf("server/discover: HTTP %d", st)
	}
	waitFor(t, "the prefetch's listing", func() bool { return g.get("resources/templates/list Bearer slow") == 1 })
	if _, err := callAs(side, map[string]string{"Authorization": "Bearer slow"}, "skills/list", nil); err != nil {
		t.Fatalf("the page waiting on a prefetch that ran out of time: %v", err)
	}
	if n := g.get("resources/templates/list Bearer slow"); n != 2 {
		t.Errorf("resources/templates/list with the token: %d, want 2 (the prefetch's, and the page's own); resources/list %d", n, g.get("resources/list Bearer slow"))
	}
}

// TestPrefetchesBounded: with every listing held at the upstream, 40
// declaring handshakes with junk cookies at once leave at most
// maxPrefetches (16) prefetches running, not one per handshake waiting for
// a discovery slot; and refused handshakes leave no authorization contexts
// behind.
func TestPrefetchesBounded(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	sc := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles = "upstream", "auto"
	}})
	release := make(chan struct{})
	g.setEdit(func(m rewrite.Message, w http.ResponseWriter, _ *http.Request) bool {
		if strings.HasPrefix(m.Method, "resources/") {
			<-release
			refuse401(w)
			return true
		}
		return false
	})
	const n = 40
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = sendDiscover(sc.URL, "Cookie", junkCookie(), true) // its answer is not what is measured
		}()
	}
	wg.Wait() // every handshake has been answered; the listings are held
	if p := upstreamfiles.Prefetches(sc.Overlay); p > 16 || p == 0 {
		t.Errorf("%d prefetches running for %d handshakes, want between 1 and 16", p, n)
	}
	close(release)
	waitFor(t, "the prefetches to end", func() bool { return upstreamfiles.Prefetches(sc.Overlay) == 0 })
	if c := upstreamfiles.Contexts(sc.Overlay); c != 0 {
		t.Errorf("%d authorization contexts left by refused handshakes, want 0", c)
	}
}

// verdicts returns the auth gate's verdict counts by label, and its cache
// hits, from the sidecar's registry.
func verdicts(t *testing.T, sc *sidecartest.Sidecar) (map[string]float64, float64) {
	t.Helper()
	mfs, err := sc.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	by, hits := map[string]float64{}, 0.0
	for _, mf := range mfs {
		switch mf.GetName() {
		case "skills_sidecar_auth_verdicts_total":
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "verdict" {
						by[l.GetValue()] = m.GetCounter().GetValue()
					}
				}
			}
		case "skills_sidecar_auth_cache_hits_total":
			hits = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return by, hits
}

// TestPrefetchCountsNoVerdict: the gate's verdict metrics count the
// requests the sidecar answers itself. A declaring handshake the upstream
// refuses, which the sidecar forwards, counts no refusal; one it admits,
// then that client's skills/list, count one admission, from the cache the
// prefetch filled.
func TestPrefetchCountsNoVerdict(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	sc := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles = "upstream", "auto"
	}})
	g.refuse("no")
	if st := discoverAs(t, sc.URL, "no", true); st != http.StatusUnauthorized {
		t.Fatalf("refused handshake: HTTP %d", st)
	}
	waitFor(t, "the refused prefetch to end", func() bool { return upstreamfiles.Prefetches(sc.Overlay) == 0 })
	if by, _ := verdicts(t, sc); by["refused"] != 0 {
		t.Errorf("a forwarded handshake's refused prefetch counted %v refusals, want 0", by["refused"])
	}
	if st := discoverAs(t, sc.URL, "yes", true); st != http.StatusOK {
		t.Fatalf("handshake: HTTP %d", st)
	}
	waitFor(t, "the prefetch to end", func() bool { return upstreamfiles.Prefetches(sc.Overlay) == 0 })
	if _, err := callAs(sc.URL, map[string]string{"Authorization": "Bearer yes"}, "skills/list", nil); err != nil {
		t.Fatal(err)
	}
	if by, hits := verdicts(t, sc); by["allowed"] != 1 || hits != 1 {
		t.Errorf("one skills/list after a prefetch counted allowed %v and cache hits %v, want 1 and 1", by["allowed"], hits)
	}
}

// TestRefusedCallersLeaveNoContexts: callers the upstream refuses, by a
// skills/list, a read of a catalog file or a declaring handshake, with the
// gate on and off, leave no authorization context behind: 4096 of them
// would otherwise clear the cache of every admitted caller.
func TestRefusedCallersLeaveNoContexts(t *testing.T) {
	for _, gate := range []bool{true, false} {
		snap := discoveryPlugin(t, []string{"a"}, 0)
		upURL, g := startGuessUpstream(t, snap, []string{"a"})
		sc := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
			c.AuthGate, c.UpstreamFiles = map[bool]string{true: "upstream", false: "none"}[gate], "auto"
		}})
		g.refuse("junk")
		for range 5 {
			_, _ = callAs(sc.URL, map[string]string{"Authorization": "Bearer junk", "Cookie": junkCookie()}, "skills/list", nil)
			_, _ = callAs(sc.URL, map[string]string{"Authorization": "Bearer junk", "Cookie": junkCookie()}, "resources/read", map[string]any{"uri": "skill://a/SKILL.md"})
		}
		_ = discoverAs(t, sc.URL, "junk", true)
		waitFor(t, "the prefetches to end", func() bool { return upstreamfiles.Prefetches(sc.Overlay) == 0 })
		if c := upstreamfiles.Contexts(sc.Overlay); c != 0 {
			t.Errorf("gate %v: %d authorization contexts left by refused callers, want 0", gate, c)
		}
	}
}

// legacyPost posts one legacy JSON-RPC message with the bearer token and
// session (none: ""), and returns the HTTP status and the session id the
// reply gives.
func legacyPost(t *testing.T, side, token, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, side, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// TestLegacyPrefetchAtInitialized: a legacy client whose initialize
// declares the skills extension has its discovery and first page's reads
// started once the upstream (go-sdk, with sessions) accepted its
// notifications/initialized, in its session; its first skills/list then
// costs the upstream nothing, not even the gate's ping. A client whose
// initialize does not declare it costs nothing at its handshake.
func TestLegacyPrefetchAtInitialized(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a", "b"}, 0)
	upURL, g := startGuessUpstreamWith(t, snap, []string{"a"}, false)
	side := guessSidecar(t, upURL, snap, true)
	uri := "skill://a/SKILL.md"
	handshake := func(token string, declares bool) string {
		caps := `{}`
		if declares {
			caps = `{"extensions":{"io.modelcontextprotocol/skills":{}}}`
		}
		st, sid := legacyPost(t, side, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}}`)
		if st != http.StatusOK || sid == "" {
			t.Fatalf("initialize: HTTP %d, session %q", st, sid)
		}
		if st, _ := legacyPost(t, side, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
			t.Fatalf("notifications/initialized: HTTP %d", st)
		}
		return sid
	}
	handshake("plain", false)
	time.Sleep(100 * time.Millisecond) // a prefetch, if one wrongly started, reaches the upstream
	if n := g.get("resources/list Bearer plain"); n != 0 {
		t.Errorf("a legacy client not declaring the extension cost %d resources/list at its handshake, want 0", n)
	}
	// A notifications/initialized the upstream refuses starts nothing.
	g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if m.Method != "notifications/initialized" || r.Header.Get("Authorization") != "Bearer refused" {
			return false
		}
		refuse401(w)
		return true
	})
	_, rsid := legacyPost(t, side, "refused", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
	if st, _ := legacyPost(t, side, "refused", rsid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusUnauthorized {
		t.Fatalf("refused notifications/initialized: HTTP %d", st)
	}
	time.Sleep(100 * time.Millisecond)
	if n := g.get("resources/list Bearer refused"); n != 0 {
		t.Errorf("a notifications/initialized the upstream refused started a prefetch (%d resources/list)", n)
	}
	g.setEdit(nil)

	sid := handshake("skills", true)
	waitFor(t, "the prefetch's read", func() bool { return g.get("resources/read Bearer skills "+uri) == 1 })
	c := &sidecartest.Caller{T: t, Endpoint: side, Token: "skills"}
	r := c.CallWith("skills/list", nil, func(h http.Header, _ map[string]any) {
		h.Set("Mcp-Session-Id", sid)
		h.Set("MCP-Protocol-Version", "2025-11-25")
	})
	var res struct {
		Skills []entry `json:"skills"`
	}
	r.OK(t, "the legacy client's first skills/list", &res)
	found := false
	for _, e := range res.Skills {
		if e.URI == uri {
			found = true
			if d := publishedDigest(t, e, uri); d != digestOf(lfServed(snap, uri)) {
				t.Errorf("%s published %s, want the upstream's bytes' %s", uri, d, digestOf(lfServed(snap, uri)))
			}
		}
	}
	if !found {
		t.Errorf("the page lists no %s: %+v", uri, res.Skills)
	}
	if n := g.get("resources/list Bearer skills"); n != 1 {
		t.Errorf("resources/list with the token: %d, want 1 (the prefetch's)", n)
	}
	if n := g.get("ping Bearer skills"); n != 0 {
		t.Errorf("the first skills/list sent %d pings: the prefetch's admission was not the session's", n)
	}
}

// TestLegacyRefusedInitializeNotesNothing: a declaring initialize the
// upstream refuses (HTTP 401, or a JSON-RPC error at 200) leaves no note,
// so a notifications/initialized of the same credentials that a stateless
// upstream accepts (202, no session needed) starts no prefetch.
func TestLegacyRefusedInitializeNotesNothing(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"}) // stateless
	side := guessSidecar(t, upURL, snap, true)
	g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if m.Method != "initialize" {
			return false
		}
		switch r.Header.Get("Authorization") {
		case "Bearer refused":
			refuse401(w)
		case "Bearer failed":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"unsupported protocol version"}}`))
		default:
			return false
		}
		return true
	})
	for _, token := range []string{"refused", "failed"} {
		_, _ = legacyPost(t, side, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
		if st, _ := legacyPost(t, side, token, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
			t.Fatalf("notifications/initialized at a stateless upstream: HTTP %d, want 202", st)
		}
	}
	time.Sleep(100 * time.Millisecond) // a prefetch, if one wrongly started, reaches the upstream
	for _, token := range []string{"refused", "failed"} {
		if n := g.get("resources/list Bearer " + token); n != 0 {
			t.Errorf("an initialize answered %s started a prefetch (%d resources/list)", token, n)
		}
	}
}
