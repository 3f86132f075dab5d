package methods_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The prefetch at the handshake (prefetch.go): a 2026-07-28 client that
// declares the skills extension in its server/discover has its context's
// discovery and first page's reads started as the handshake passes, so its
// first skills/list finds them done.

// discoverAs sends a 2026-07-28 server/discover with the bearer token,
// declaring the skills extension or not, and returns the HTTP status.
func discoverAs(t *testing.T, side, token string, declares bool) int {
	t.Helper()
	caps := `{}`
	if declares {
		caps = `{"extensions":{"io.modelcontextprotocol/skills":{}}}`
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	req, _ := http.NewRequest(http.MethodPost, side, strings.NewReader(body))
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// waitFor polls cond for up to 10 s (the prefetch runs in the background).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
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
			body := []byte(`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}}}}`)
			req, _ := http.NewRequest(http.MethodPost, side, bytes.NewReader(body))
			for k, v := range map[string]string{"Cookie": junkCookie(), "Content-Type": "application/json",
				"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"} {
				req.Header.Set(k, v)
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
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
