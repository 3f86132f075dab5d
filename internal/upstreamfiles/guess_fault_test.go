package upstreamfiles_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// Faults of the guessed reads, found by review: a guessed result must not
// outlive a notification that the file changed, nor reach a request other
// than the one it was read for (another caller's credentials in a shared
// context, or a request of the same context that would inherit the
// owner's cancellation).

// writeRead answers a resources/read with text.
func writeRead(w http.ResponseWriter, id json.RawMessage, uri, text string) {
	w.Header().Set("Content-Type", "application/json")
	res, _ := json.Marshal(map[string]any{"contents": []map[string]any{{"uri": uri, "mimeType": "text/markdown", "text": text}}})
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + string(res) + `}`))
}

// holdFirstRead makes g hold the first resources/read with the bearer
// token until that request ends (its caller left); the channel says when
// it arrived.
func holdFirstRead(g *guessUpstream, token string) <-chan struct{} {
	held := make(chan struct{}, 1)
	var once sync.Once
	g.setEdit(func(m rewrite.Message, _ http.ResponseWriter, r *http.Request) bool {
		if m.Method != "resources/read" || r.Header.Get("Authorization") != "Bearer "+token {
			return false
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return false
		}
		held <- struct{}{}
		<-r.Context().Done()
		return true
	})
	return held
}

// listUntilCancelled sends a modern skills/list with the bearer token from
// another goroutine; cancel makes its caller leave, and gone is closed
// once the request has returned.
func listUntilCancelled(side, token string) (cancel func(), gone <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		body := `{"jsonrpc":"2.0","id":1,"method":"skills/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, side, strings.NewReader(body))
		for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "skills/list"} {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	return cancel, done
}

// pageWhileALeaves lists skills as request A with the bearer token and,
// once A's first read has reached the upstream (held, holdFirstRead), as
// request B with the same token; 100 ms later A leaves. It returns B's
// page. (If B has not reached A's discovery or read by then, the test
// proves less, never fails.)
func pageWhileALeaves(t *testing.T, side, token string, held <-chan struct{}) page {
	t.Helper()
	cancelA, goneA := listUntilCancelled(side, token)
	arrives(t, held, "A's first read never reached the upstream")
	pageB := pageInBackground(side, token)
	time.Sleep(100 * time.Millisecond)
	cancelA()
	<-goneA
	return <-pageB
}

// page is a skills/list answer: its result, or the error.
type page struct {
	res json.RawMessage
	err error
}

// pageInBackground sends skills/list with the bearer token from another
// goroutine; the channel gets its page.
func pageInBackground(side, token string) <-chan page {
	ch := make(chan page, 1)
	go func() {
		res, err := callAs(side, map[string]string{"Authorization": "Bearer " + token}, "skills/list", nil)
		ch <- page{res, err}
	}()
	return ch
}

// TestGuessNotKeptPastUpdated: a guessed read answered before the
// upstream's notifications/resources/updated for its file, while the
// caller's listing is still held, is not what the context's later pages
// publish: they have the bytes after the change.
func TestGuessNotKeptPastUpdated(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	sc := guessSidecarOf(t, upURL, snap, false)
	uri := "skill://a/SKILL.md"
	v1 := lfServed(snap, uri)
	v2 := v1 + "\nchanged after the notification\n"
	var mu sync.Mutex
	content := v1
	readDone := make(chan struct{}, 1)
	release := make(chan struct{})
	g.mu.Lock()
	g.edit = func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		switch m.Method {
		case "resources/read":
			mu.Lock()
			c := content
			mu.Unlock()
			writeRead(w, m.ID, uri, c)
			if r.Header.Get("Authorization") == "Bearer second" {
				select {
				case readDone <- struct{}{}:
				default:
				}
			}
			return true
		case "resources/list":
			if r.Header.Get("Authorization") == "Bearer second" {
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
			}
		}
		return false
	}
	g.mu.Unlock()
	setHint(t, sc.URL)
	done := make(chan error, 1)
	go func() {
		_, err := callAs(sc.URL, map[string]string{"Authorization": "Bearer second"}, "skills/list", nil)
		done <- err
	}()
	select {
	case <-readDone:
	case <-time.After(10 * time.Second):
		t.Fatal("no guessed read beside the held listing")
	}
	mu.Lock()
	content = v2
	mu.Unlock()
	sc.Overlay.ResourcesChanged(httptest.NewRequest(http.MethodGet, "/mcp", nil), "notifications/resources/updated", uri)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	res, err := callAs(sc.URL, map[string]string{"Authorization": "Bearer second"}, "skills/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := publishedDigest(t, skillsOf(t, res)[uri], uri); d != digestOf(v2) {
		t.Errorf("the page after the updated notification published %s (v1 is %s), want v2's %s", d, digestOf(v1), digestOf(v2))
	}
}

// TestGuessOfALeavingCallerNotInherited: caller A's guessed read is held at
// the upstream until A leaves; B, with the same credentials (so the same
// context and discovery), asks meanwhile. B gets its page with the
// upstream's bytes, not A's cancellation as a 502.
func TestGuessOfALeavingCallerNotInherited(t *testing.T) {
	for _, gate := range []bool{false, true} {
		snap := discoveryPlugin(t, []string{"a"}, 0)
		upURL, g := startGuessUpstream(t, snap, []string{"a"})
		side := guessSidecar(t, upURL, snap, gate)
		uri := "skill://a/SKILL.md"
		setHint(t, side)
		// A's guessed read ends when A leaves; B joins A's discovery.
		b := pageWhileALeaves(t, side, "shared", holdFirstRead(g, "shared"))
		if b.err != nil {
			t.Fatalf("gate %v: B, still connected, failed because A left: %v", gate, b.err)
		}
		if d := publishedDigest(t, skillsOf(t, b.res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
			t.Errorf("gate %v: B published %s, want the upstream's %s", gate, d, digestOf(lfServed(snap, uri)))
		}
	}
}

// TestSharedContextRefusalNotAnothersAnswer: with upstream-files-shared
// one context serves callers with different credentials. A caller the
// upstream lets list but not read, and one it admits, ask at once: the
// admitted caller gets its page, never the other's refusal.
func TestSharedContextRefusalNotAnothersAnswer(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	side := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.UpstreamFilesShared = "upstream", "auto", true
		c.UpstreamFilesTTL = 50 * time.Millisecond
	}}).URL
	setHint(t, side)
	time.Sleep(100 * time.Millisecond) // the shared context expires; the hint stays
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	g.mu.Lock()
	g.edit = func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if m.Method != "resources/read" || r.Header.Get("Authorization") != "Bearer A" {
			return false
		}
		select {
		case held <- struct{}{}:
		default:
		}
		<-release
		refuse401(w) // A may list but not read
		return true
	}
	g.mu.Unlock()
	errA := listInBackground(side, "A")
	arrives(t, held, "A's read never reached the upstream")
	pageB := pageInBackground(side, "B")
	time.Sleep(100 * time.Millisecond) // B waits on the shared discovery
	close(release)
	<-errA // A may get B's verdict: in a shared context verdicts are everyone's
	b := <-pageB
	if b.err != nil {
		t.Fatalf("B, admitted with its own credentials, got: %v", b.err)
	}
	// B's page has the bytes the upstream serves B, not the plugin's for
	// a file whose only read so far (A's) was refused.
	uri := "skill://a/SKILL.md"
	if d := publishedDigest(t, skillsOf(t, b.res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
		t.Errorf("B's page published %s for %s, want the upstream's bytes' %s", d, uri, digestOf(lfServed(snap, uri)))
	}
}

// TestSharedDiscoveryRefusalNotAnothersAnswer: with upstream-files-shared,
// caller B waits on the shared discovery that caller A started, and the
// upstream refuses A's listing. A gets its refusal; B, admitted with its
// own credentials, runs a discovery of its own and gets its page, not A's
// 401 (which would start B's OAuth flow for A's credentials).
func TestSharedDiscoveryRefusalNotAnothersAnswer(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	side := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.UpstreamFilesShared = "upstream", "auto", true
	}}).URL
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	g.mu.Lock()
	g.edit = func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer A" {
			return false
		}
		if m.Method == "resources/list" {
			held <- struct{}{}
			<-release
		}
		refuse401(w)
		return true
	}
	g.mu.Unlock()
	errA := listInBackground(side, "A")
	arrives(t, held, "A's listing never reached the upstream")
	errB := listInBackground(side, "B")
	// B's probe is answered, then it waits on A's discovery.
	deadline := time.Now().Add(10 * time.Second)
	for g.get("server/discover Bearer B") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-errA; err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("A, refused, got %v; want its 401", err)
	}
	if err := <-errB; err != nil {
		t.Errorf("B, admitted with its own credentials, got: %v", err)
	}
}

// TestUnvouchedGuessesNotKept: a new caller whose first listing page is
// neither a result nor a refusal (a JSON-RPC error: the page does not
// admit it, and the gate's own probe decides) still completes its
// discovery, a URI template serving the files, and its guessed reads
// succeed; the probe then refuses it. It gets the refusal and leaves no
// context and no verdict behind; with upstream-files-shared, the next
// admitted caller's page has the bytes the upstream serves it, not the
// refused caller's.
func TestUnvouchedGuessesNotKept(t *testing.T) {
	for _, shared := range []bool{false, true} {
		snap := discoveryPlugin(t, []string{"a", "b"}, 0)
		upURL, g := startGuessUpstream(t, snap, []string{"a", "b"})
		sc := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
			c.AuthGate, c.UpstreamFiles, c.UpstreamFilesShared = "upstream", "auto", shared
		}})
		var offset atomic.Int64 // the overlay's clock, stepped past the TTL below
		upstreamfiles.SetOverlayClock(sc.Overlay, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
		setHint(t, sc.URL)
		offset.Store(int64(time.Hour)) // first's context expires; the hint stays
		before, verdicts := upstreamfiles.Contexts(sc.Overlay), upstreamfiles.Verdicts(sc.Overlay)
		if shared {
			before = 0 // the one shared context has expired: a new one is made
		}
		g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
			if r.Header.Get("Authorization") != "Bearer refused" {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			switch m.Method {
			case "resources/list":
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"busy"}}`))
			case "resources/templates/list":
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resourceTemplates":[{"uriTemplate":"skill://{name}/SKILL.md","name":"skills"}]}}`))
			case "resources/read":
				uri, _ := rewrite.GetString(m.Params, "uri")
				writeRead(w, m.ID, uri, "---\nname: x\ndescription: what a refused caller is shown\n---\n")
			default: // the gate's probe, slower than the discovery
				time.Sleep(100 * time.Millisecond)
				refuse401(w)
			}
			return true
		})
		if r := listAs(t, sc.URL, "refused"); r.Status != http.StatusUnauthorized {
			t.Fatalf("shared %v: the refused caller got HTTP %d %s, want the probe's 401", shared, r.Status, r.Body)
		}
		noDiscoveryLeft(t, "after the refusal")
		if c, v := upstreamfiles.Contexts(sc.Overlay), upstreamfiles.Verdicts(sc.Overlay); c > before || !shared && v > verdicts {
			t.Errorf("shared %v: %d contexts and %d verdicts after a refused caller, want at most %d and %d", shared, c, v, before, verdicts)
		}
		g.setEdit(nil)
		res, err := callAs(sc.URL, map[string]string{"Authorization": "Bearer next"}, "skills/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, uri := range []string{"skill://a/SKILL.md", "skill://b/SKILL.md"} {
			if d := publishedDigest(t, skillsOf(t, res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
				t.Errorf("shared %v: the next caller's page published %s for %s, want the upstream's bytes' %s", shared, d, uri, digestOf(lfServed(snap, uri)))
			}
		}
	}
}

// TestWaiterReadsWhatALeaverLeft: request A of a context claims the read
// of a served file and leaves while the upstream holds it; request B of
// the same context, waiting on that read, reads the file itself and
// publishes the upstream's bytes, not the plugin's (A's read left no
// verdict). No hint exists, so no guessed read is involved.
func TestWaiterReadsWhatALeaverLeft(t *testing.T) {
	for _, gate := range []bool{false, true} {
		snap := discoveryPlugin(t, []string{"a"}, 0)
		upURL, g := startGuessUpstream(t, snap, []string{"a"})
		side := guessSidecar(t, upURL, snap, gate)
		uri := "skill://a/SKILL.md"
		// A's read ends when A leaves; B waits on A's read.
		b := pageWhileALeaves(t, side, "same", holdFirstRead(g, "same"))
		if b.err != nil {
			t.Fatalf("gate %v: B got %v", gate, b.err)
		}
		if d := publishedDigest(t, skillsOf(t, b.res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
			t.Errorf("gate %v: B's page published %s, want the upstream's bytes' %s (A's read left no verdict)", gate, d, digestOf(lfServed(snap, uri)))
		}
		if n := g.get("resources/read Bearer same " + uri); n != 2 {
			t.Errorf("gate %v: %s read %d times, want 2 (A's, left; B's own)", gate, uri, n)
		}
	}
}

// TestUnvouchedPrefetchKeepsNothing: a client declares the skills
// extension at its handshake, and the prefetch's first listing page admits
// nobody: a JSON-RPC error (the set is then incomplete), or a result at
// HTTP 404 (complete, but only a result at 200 admits), while a URI
// template serves the files and reads would succeed. The prefetch reads
// nothing past the guesses sent beside its listings and keeps nothing: no
// context, no verdict, no discovery; the caller's refused page after it
// leaves nothing either.
func TestUnvouchedPrefetchKeepsNothing(t *testing.T) {
	for _, listing := range []struct {
		name   string
		status int
		body   string
	}{
		{"a JSON-RPC error", http.StatusOK, `"error":{"code":-32603,"message":"busy"}`},
		{"a result at 404", http.StatusNotFound, `"result":{"resources":[]}`},
	} {
		snap := discoveryPlugin(t, []string{"a", "b"}, 0)
		upURL, g := startGuessUpstream(t, snap, []string{"a", "b"})
		sc := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }})
		setHint(t, sc.URL)
		before, verdicts := upstreamfiles.Contexts(sc.Overlay), upstreamfiles.Verdicts(sc.Overlay)
		g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
			if r.Header.Get("Authorization") != "Bearer unvouched" {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			switch m.Method {
			case "resources/list":
				w.WriteHeader(listing.status)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,` + listing.body + `}`))
			case "resources/templates/list":
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resourceTemplates":[{"uriTemplate":"skill://{name}/SKILL.md","name":"skills"}]}}`))
			case "resources/read":
				uri, _ := rewrite.GetString(m.Params, "uri")
				writeRead(w, m.ID, uri, "---\nname: x\ndescription: what an unadmitted caller is shown\n---\n")
			default: // the handshake, and the gate's probe
				refuse401(w)
			}
			return true
		})
		discoverAs(t, sc.URL, "unvouched", true)
		waitFor(t, "the prefetch to end", func() bool { return upstreamfiles.Prefetches(sc.Overlay) == 0 })
		// The guessed reads go out beside the listings, before their answer.
		if n := g.get("resources/read Bearer unvouched"); n > 2 {
			t.Errorf("%s: the prefetch of a caller no listing admitted sent %d reads, want at most the 2 guessed beside its listings", listing.name, n)
		}
		if c, v := upstreamfiles.Contexts(sc.Overlay), upstreamfiles.Verdicts(sc.Overlay); c != before || v != verdicts {
			t.Errorf("%s: %d contexts and %d verdicts after the prefetch, want %d and %d", listing.name, c, v, before, verdicts)
		}
		lists := g.get("resources/list Bearer unvouched")
		if r := listAs(t, sc.URL, "unvouched"); r.Status != http.StatusUnauthorized {
			t.Fatalf("%s: the caller's page: HTTP %d %s, want the probe's 401", listing.name, r.Status, r.Body)
		}
		if n := g.get("resources/list Bearer unvouched") - lists; n != 1 {
			t.Errorf("%s: the caller's page ran %d discoveries, want 1 of its own: the prefetch's was kept", listing.name, n)
		}
		noDiscoveryLeft(t, "after the refusal")
		if c, v := upstreamfiles.Contexts(sc.Overlay), upstreamfiles.Verdicts(sc.Overlay); c != before || v != verdicts {
			t.Errorf("%s: %d contexts and %d verdicts after the refused page, want %d and %d", listing.name, c, v, before, verdicts)
		}
	}
}

// TestLeaverDoesNotMarkUpstreamDown: with --auth-gate none (where an
// unreachable upstream leaves verdicts unknown for a while), caller A
// leaves while the upstream holds its read. That is no word on the
// upstream: caller B, right after, reads the upstream's bytes through the
// sidecar and its page publishes their digest, not the plugin's.
func TestLeaverDoesNotMarkUpstreamDown(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	side := guessSidecar(t, upURL, snap, false)
	uri := "skill://a/SKILL.md"
	held := holdFirstRead(g, "leaver")
	cancelA, goneA := listUntilCancelled(side, "leaver")
	arrives(t, held, "A's read never reached the upstream")
	cancelA()
	<-goneA
	time.Sleep(50 * time.Millisecond) // A's request has ended in the sidecar too
	res, err := callAs(side, map[string]string{"Authorization": "Bearer B"}, "resources/read", map[string]any{"uri": uri})
	if err != nil {
		t.Fatal(err)
	}
	var read struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if json.Unmarshal(res, &read) != nil || len(read.Contents) != 1 || read.Contents[0].Text != lfServed(snap, uri) {
		t.Errorf("B's read after A left: %s, want the upstream's bytes (LF line ends), not the plugin's", res)
	}
	pb := <-pageInBackground(side, "B")
	if pb.err != nil {
		t.Fatal(pb.err)
	}
	if d := publishedDigest(t, skillsOf(t, pb.res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
		t.Errorf("B's page after A left published %s, want the upstream's bytes' %s", d, digestOf(lfServed(snap, uri)))
	}
}

// TestWaitersDoNotRepeatAFailedRead: eight pages of one context at once,
// the first read of the served file held and then answered with a result
// that has no contents (as every later read is): a reply that is no
// answer. The pages waiting on that read do not read the file again, and
// answer as the page that read it does, and as a page after them does:
// with that failure. A read whose own caller left, or that the upstream
// refused, is repeated (TestWaiterReadsWhatALeaverLeft,
// TestWaiterOfAnotherSessionReadsAgain).
func TestWaitersDoNotRepeatAFailedRead(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	sc := guessSidecarOf(t, upURL, snap, false)
	uri := "skill://a/SKILL.md"
	held, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	g.setEdit(func(m rewrite.Message, w http.ResponseWriter, _ *http.Request) bool {
		if m.Method != "resources/read" {
			return false
		}
		once.Do(func() {
			held <- struct{}{}
			<-release
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`))
		return true
	})
	pages := []<-chan page{pageInBackground(sc.URL, "same")}
	arrives(t, held, "the first read never reached the upstream")
	for range 7 {
		pages = append(pages, pageInBackground(sc.URL, "same"))
	}
	waitFor(t, "seven pages waiting on the first read", func() bool { return upstreamfiles.ReadWaiters(sc.Overlay) == 7 })
	close(release)
	for i, p := range pages {
		if pg := <-p; pg.err == nil {
			t.Errorf("page %d: a result, want the failure of the read, as the other pages get", i)
		}
	}
	if n := g.get("resources/read Bearer same " + uri); n != 1 {
		t.Errorf("%s read %d times by eight pages waiting on one failed read, want 1", uri, n)
	}
	if pg := <-pageInBackground(sc.URL, "same"); pg.err == nil {
		t.Errorf("a page after them: a result, want the failure again")
	}
}

// TestWaiterOfAnotherSessionReadsAgain: two requests with the same
// credentials (one context: credentials and address, not a session) in
// two sessions. The first one's read is held and then refused 404, as an
// upstream answers a session it has forgotten; the second, waiting on it,
// reads with its own session and publishes the upstream's bytes, not the
// other session's refusal (which would tell its client to drop a live
// session).
func TestWaiterOfAnotherSessionReadsAgain(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	sc := guessSidecarOf(t, upURL, snap, false)
	uri := "skill://a/SKILL.md"
	held, release := make(chan struct{}, 1), make(chan struct{})
	g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if m.Method != "resources/read" {
			return false
		}
		if r.Header.Get("Mcp-Session-Id") == "dead" {
			held <- struct{}{}
			<-release
			http.Error(w, "session not found", http.StatusNotFound)
			return true
		}
		writeRead(w, m.ID, uri, lfServed(snap, uri))
		return true
	})
	in := func(session string) <-chan page {
		ch := make(chan page, 1)
		go func() {
			res, err := callAs(sc.URL, map[string]string{"Authorization": "Bearer same", "Mcp-Session-Id": session}, "skills/list", nil)
			ch <- page{res, err}
		}()
		return ch
	}
	dead := in("dead")
	arrives(t, held, "the dead session's read never reached the upstream")
	live := in("live")
	waitFor(t, "the live session's page waiting on that read", func() bool { return upstreamfiles.ReadWaiters(sc.Overlay) == 1 })
	close(release)
	<-dead
	pl := <-live
	if pl.err != nil {
		t.Fatalf("the live session's page: %v, want its page (the 404 was the other session's)", pl.err)
	}
	if d := publishedDigest(t, skillsOf(t, pl.res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
		t.Errorf("the live session's page published %s, want the upstream's bytes' %s", d, digestOf(lfServed(snap, uri)))
	}
}
