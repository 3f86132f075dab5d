package upstreamfiles_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// The guessed reads (internal/upstreamfiles/discovery.go, "Guessed reads"): a new context's first
// page reads the files the last discovery found served beside its own
// listings, and uses a result only when its own listings say the file is
// served.

// guessUpstream is a go-sdk upstream serving one resource outside the
// catalog (so it declares resources and the sidecar must ask) and the
// SKILL.md of the skills served as its own listed resources, with LF line
// ends where the plugin has CRLF, behind middleware that counts requests
// (and notifications) by method, and by method and caller (Authorization),
// and lets a test step in before the server: edit returns true when it
// wrote the reply. It is the one test upstream of the discovery's fault
// and guess tests.
type guessUpstream struct {
	mu    sync.Mutex
	count map[string]int // "method", "method Bearer x", and "resources/read Bearer x uri"
	edit  func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool
}

func (g *guessUpstream) get(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count[key]
}

func startGuessUpstream(t testing.TB, snap *catalog.Snapshot, served []string) (string, *guessUpstream) {
	t.Helper()
	return startGuessUpstreamWith(t, snap, served, true)
}

// startGuessUpstreamWith is startGuessUpstream, stateless or with legacy
// sessions.
func startGuessUpstreamWith(t testing.TB, snap *catalog.Snapshot, served []string, stateless bool) (string, *guessUpstream) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "guess", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "test://unrelated", Name: "unrelated"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	for _, name := range served {
		uri := "skill://" + name + "/SKILL.md"
		s.AddResource(&mcp.Resource{URI: uri, Name: name, MIMEType: "text/markdown"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: lfServed(snap, uri)}}}, nil
		})
	}
	h := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: stateless})
	g := &guessUpstream{count: map[string]int{}}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		m, err := rewrite.ParseMessage(body)
		if err == nil && (m.Kind == rewrite.KindRequest || m.Kind == rewrite.KindNotification) {
			who := r.Header.Get("Authorization")
			g.mu.Lock()
			g.count[m.Method]++
			g.count[m.Method+" "+who]++
			if uri, ok := rewrite.GetString(m.Params, "uri"); ok {
				g.count[m.Method+" "+who+" "+uri]++
			}
			edit := g.edit
			g.mu.Unlock()
			if edit != nil && edit(m, w, r) {
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	return up.URL, g
}

// setFault is setEdit for a test that looks at the method alone.
func (g *guessUpstream) setFault(fn func(method string, w http.ResponseWriter, r *http.Request) bool) {
	if fn == nil {
		g.setEdit(nil)
		return
	}
	g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool { return fn(m.Method, w, r) })
}

// setEdit replaces g's edit (nil: the server answers everything).
func (g *guessUpstream) setEdit(edit func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.edit = edit
}

// refuse makes g refuse every request with the bearer token, as an upstream
// checking credentials does.
func (g *guessUpstream) refuse(token string) {
	g.setEdit(func(_ rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer "+token {
			return false
		}
		refuse401(w)
		return true
	})
}

// listInBackground sends skills/list with the bearer token from another
// goroutine; the channel gets its error.
func listInBackground(side, token string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := callAs(side, map[string]string{"Authorization": "Bearer " + token}, "skills/list", nil)
		done <- err
	}()
	return done
}

// arrives waits up to 10 s for a signal on ch, failing the test with what
// did not happen.
func arrives(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// guessSidecar starts a sidecar with upstream files on, and the gate on or
// off, and returns its endpoint.
func guessSidecar(t testing.TB, upstream string, snap *catalog.Snapshot, gate bool) string {
	t.Helper()
	return guessSidecarOf(t, upstream, snap, gate).URL
}

// guessSidecarOf is guessSidecar, returning the sidecar (for its overlay).
func guessSidecarOf(t testing.TB, upstream string, snap *catalog.Snapshot, gate bool) *sidecartest.Sidecar {
	t.Helper()
	return sidecartest.Start(t, upstream, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles = "none", "auto"
		if gate {
			c.AuthGate = "upstream"
		}
	}})
}

// hinted starts a guess upstream serving the SKILL.md of skills a and b
// (a plugin of those two), a sidecar in front of it with the gate on or
// off, and sets the hint (setHint).
func hinted(t *testing.T, gate bool) (*catalog.Snapshot, string, *guessUpstream) {
	t.Helper()
	snap := discoveryPlugin(t, []string{"a", "b"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a", "b"})
	side := guessSidecar(t, upURL, snap, gate)
	setHint(t, side)
	return snap, side, g
}

// setHint lists skills as "Bearer first", whose complete discovery makes
// what the upstream serves it the hint new contexts guess from.
func setHint(t *testing.T, side string) {
	t.Helper()
	if _, err := callAs(side, map[string]string{"Authorization": "Bearer first"}, "skills/list", nil); err != nil {
		t.Fatal(err)
	}
}

// TestGuessedReadsBesideListings: once one caller's discovery has found
// the upstream serving two SKILL.md, a new caller's first page reads them
// while its own resources/list is still held at the upstream (so they are
// not on the page's path after the listings), reads each once, and
// publishes the upstream's bytes; with the gate on and off.
func TestGuessedReadsBesideListings(t *testing.T) {
	for _, gate := range []bool{true, false} {
		snap := discoveryPlugin(t, []string{"a", "b", "c"}, 1)
		upURL, g := startGuessUpstream(t, snap, []string{"a", "b"})
		side := guessSidecar(t, upURL, snap, gate)
		setHint(t, side)
		// The second caller's listing waits until both of its reads have
		// reached the upstream (or 10 s, which fails the test below).
		reads := make(chan struct{}, 2)
		var overlapped sync.Once
		overlap := false
		g.mu.Lock()
		g.edit = func(m rewrite.Message, _ http.ResponseWriter, r *http.Request) bool {
			if r.Header.Get("Authorization") != "Bearer second" {
				return false
			}
			switch m.Method {
			case "resources/read":
				reads <- struct{}{}
			case "resources/list":
				timeout := time.After(10 * time.Second)
				for range 2 {
					select {
					case <-reads:
					case <-timeout:
						return false
					}
				}
				overlapped.Do(func() { overlap = true })
			}
			return false
		}
		g.mu.Unlock()
		res, err := callAs(side, map[string]string{"Authorization": "Bearer second"}, "skills/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !overlap {
			t.Errorf("gate %v: the new caller's reads did not reach the upstream while its resources/list was held", gate)
		}
		got := skillsOf(t, res)
		for _, name := range []string{"a", "b"} {
			uri := "skill://" + name + "/SKILL.md"
			if d := publishedDigest(t, got[uri], uri); d != digestOf(lfServed(snap, uri)) {
				t.Errorf("gate %v: %s published %s, want the upstream's bytes' %s", gate, uri, d, digestOf(lfServed(snap, uri)))
			}
			if n := g.get("resources/read Bearer second " + uri); n != 1 {
				t.Errorf("gate %v: %s read %d times for the new caller, want 1", gate, uri, n)
			}
		}
		if n := g.get("resources/read Bearer second skill://c/SKILL.md"); n != 0 {
			t.Errorf("gate %v: a file nobody serves was read %d times", gate, n)
		}
		if n := g.get("server/discover Bearer second"); n != 0 {
			t.Errorf("gate %v: the new caller cost %d probes, want none", gate, n)
		}
	}
}

// TestWrongGuessNotUsed: the upstream lists a SKILL.md to one caller only,
// but answers anyone's read of it. A second caller's page guesses the read
// (one request wasted) and still publishes the plugin's bytes: only its
// own listing says what it is served. Its warm page reads nothing more,
// and the wrong guess left no verdict behind.
func TestWrongGuessNotUsed(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a", "b"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	sc := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }})
	side := sc.URL
	if _, err := callAs(side, map[string]string{"Authorization": "Bearer lister"}, "skills/list", nil); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.edit = func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if m.Method != "resources/list" || r.Header.Get("Authorization") != "Bearer other" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resources":[]}}`))
		return true
	}
	g.mu.Unlock()
	uri := "skill://a/SKILL.md"
	f, _ := snap.File(uri)
	for _, page := range []string{"first", "warm"} {
		res, err := callAs(side, map[string]string{"Authorization": "Bearer other"}, "skills/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := publishedDigest(t, skillsOf(t, res)[uri], uri); d != digestOf(string(f.Data)) {
			t.Errorf("%s page: %s published %s, want the plugin's %s (the caller's listing does not serve it)", page, uri, d, digestOf(string(f.Data)))
		}
	}
	if n := g.get("resources/read Bearer other " + uri); n != 1 {
		t.Errorf("the other caller's pages read %s %d times, want 1 (the guess, on its first page)", uri, n)
	}
	if n := upstreamfiles.Verdicts(sc.Overlay); n != 1 {
		t.Errorf("%d file verdicts cached, want 1 (the lister's): a wrong guess is dropped unused", n)
	}
}

// TestGuessedReadsOfARefusedCaller: a caller the upstream refuses, after
// another's discovery gave a hint, gets the upstream's refusal; its
// guessed reads end with its request (no goroutine of them is left) and
// nothing of them is kept: admitted later, the same credentials read again.
// Twice: with the guessed reads still under way at the refusal (cancelled),
// and with them answered before it. (The refusal waits for both guessed
// reads to arrive: counted before, a cancelled read could still reach the
// upstream after the count, 1 run in 40.)
func TestGuessedReadsOfARefusedCaller(t *testing.T) {
	for _, answered := range []bool{false, true} {
		snap, side, g := hinted(t, true)
		// The upstream refuses the caller's listings once both guessed
		// reads have reached it (so none arrives after the count below).
		// It holds those reads until the sidecar cancels them, or answers
		// them and then waits 50 ms before refusing, for the sidecar to
		// have their results (if it has not yet, the reads are cancelled
		// instead: the test proves less, never fails).
		var reads atomic.Int32
		arrived := make(chan struct{})
		g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
			if r.Header.Get("Authorization") != "Bearer refused" {
				return false
			}
			if m.Method == "resources/read" {
				if answered {
					uri, _ := rewrite.GetString(m.Params, "uri")
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(sidecartest.MustMarshal(t, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
						"contents": []map[string]any{{"uri": uri, "mimeType": "text/markdown", "text": lfServed(snap, uri)}}}}))
				}
				if reads.Add(1) == 2 {
					close(arrived)
				}
				if !answered {
					select { // until the sidecar cancels it (bounded: a failing test must not hang)
					case <-r.Context().Done():
					case <-time.After(10 * time.Second):
					}
				}
				return true
			}
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
			}
			if answered {
				time.Sleep(50 * time.Millisecond)
			}
			refuse401(w)
			return true
		})
		r := listAs(t, side, "refused")
		if r.Status != http.StatusUnauthorized || r.Error == nil {
			t.Fatalf("answered %v: refused caller: HTTP %d, body %s; want the upstream's 401", answered, r.Status, r.Body)
		}
		noDiscoveryLeft(t, "after the refusal")
		refused := g.get("resources/read Bearer refused")
		if refused != 2 {
			t.Errorf("answered %v: the refused caller's page sent %d guessed reads, want 2", answered, refused)
		}
		g.setEdit(nil)
		listAs(t, side, "refused").OK(t, "the admitted caller", nil)
		if n := g.get("resources/read Bearer refused") - refused; n != 2 {
			t.Errorf("answered %v: the admitted caller's page read %d files, want 2: something of the refused page was kept", answered, n)
		}
	}
}

// TestGuessedReadsServeEveryWaiter: when two requests of a new context
// share its discovery (two pages at once, or a page and a prefetch), the
// guessed reads made beside it answer both: each served file is read
// once, whichever request resolves the page first. Ten contexts, two
// concurrent first pages each, the listings held 20 ms so that both join
// the one discovery.
func TestGuessedReadsServeEveryWaiter(t *testing.T) {
	_, side, g := hinted(t, true)
	g.setEdit(func(m rewrite.Message, _ http.ResponseWriter, _ *http.Request) bool {
		if m.Method == "resources/list" {
			time.Sleep(20 * time.Millisecond)
		}
		return false
	})
	for i := range 10 {
		token := fmt.Sprintf("pair%d", i)
		a, b := listInBackground(side, token), listInBackground(side, token)
		for _, done := range []<-chan error{a, b} {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		for _, uri := range []string{"skill://a/SKILL.md", "skill://b/SKILL.md"} {
			if n := g.get("resources/read Bearer " + token + " " + uri); n != 1 {
				t.Errorf("%s: %s read %d times for two pages sharing one discovery, want 1", token, uri, n)
			}
		}
		if n := g.get("resources/list Bearer " + token); n != 1 {
			t.Errorf("%s: %d discoveries for two pages at once, want 1", token, n)
		}
	}
}

// TestKnownFilesNotGuessed: a context whose listing breaks off on its
// second page (a JSON-RPC error) keeps the verdicts its first page read,
// but not its incomplete set, so each page runs a discovery again. That
// discovery's guesses skip the files the context knows: the two served
// files are read once over three pages, with the gate on and off.
func TestKnownFilesNotGuessed(t *testing.T) {
	for _, gate := range []bool{true, false} {
		snap, side, g := hinted(t, gate)
		g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
			return cutListing(m, w, r, "a", "b")
		})
		for page := range 3 {
			res, err := callAs(side, map[string]string{"Authorization": "Bearer cut"}, "skills/list", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, uri := range []string{"skill://a/SKILL.md", "skill://b/SKILL.md"} {
				if d := publishedDigest(t, skillsOf(t, res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
					t.Errorf("gate %v, page %d: %s published %s, want the upstream's bytes' %s", gate, page, uri, d, digestOf(lfServed(snap, uri)))
				}
			}
		}
		if n := g.get("resources/list Bearer cut"); n != 6 {
			t.Errorf("gate %v: %d resources/list pages for three pages, want 6 (the incomplete set is not kept)", gate, n)
		}
		for _, uri := range []string{"skill://a/SKILL.md", "skill://b/SKILL.md"} {
			if n := g.get("resources/read Bearer cut " + uri); n != 1 {
				t.Errorf("gate %v: %s read %d times over three pages, want 1", gate, uri, n)
			}
		}
	}
}

// cutListing answers the resources/list of "Bearer cut" itself: its first
// page lists the SKILL.md of skills and promises more, and the next is a
// JSON-RPC error, so the set is incomplete and not kept. It reports
// whether it answered.
func cutListing(m rewrite.Message, w http.ResponseWriter, r *http.Request, skills ...string) bool {
	if m.Method != "resources/list" || r.Header.Get("Authorization") != "Bearer cut" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	if _, more := rewrite.GetString(m.Params, "cursor"); more {
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"busy"}}`))
		return true
	}
	var items []string
	for _, name := range skills {
		items = append(items, `{"uri":"skill://`+name+`/SKILL.md","name":"`+name+`"}`)
	}
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resources":[` + strings.Join(items, ",") + `],"nextCursor":"more"}}`))
	return true
}

// TestReadUnderWayNotGuessed: while a context's first page reads a served
// file (held at the upstream), another caller's discovery makes the file
// the hint, and the context's second page runs a discovery again (its
// first set was incomplete). That discovery does not guess the file under
// way: the second page waits for the first page's read, and the file is
// read once.
func TestReadUnderWayNotGuessed(t *testing.T) {
	snap := discoveryPlugin(t, []string{"a", "b"}, 0)
	upURL, g := startGuessUpstream(t, snap, []string{"a"})
	sc := guessSidecarOf(t, upURL, snap, false)
	uri := "skill://a/SKILL.md"
	// Only the first read is held (a guessed read after it must reach
	// the upstream to be counted), and a failing test releases it.
	held, release := make(chan struct{}, 1), make(chan struct{})
	var holding atomic.Bool
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free)
	g.setEdit(func(m rewrite.Message, w http.ResponseWriter, r *http.Request) bool {
		if cutListing(m, w, r, "a") {
			return true
		}
		if m.Method == "resources/read" && r.Header.Get("Authorization") == "Bearer cut" && holding.CompareAndSwap(false, true) {
			held <- struct{}{}
			<-release
		}
		return false
	})
	first := pageInBackground(sc.URL, "cut") // no hint yet: it claims the read
	arrives(t, held, "the first page's read never reached the upstream")
	if _, err := callAs(sc.URL, map[string]string{"Authorization": "Bearer other"}, "skills/list", nil); err != nil {
		t.Fatal(err) // a complete discovery: the hint now serves the file
	}
	second := pageInBackground(sc.URL, "cut")
	waitFor(t, "the second page waiting on the first page's read", func() bool { return upstreamfiles.ReadWaiters(sc.Overlay) == 1 })
	free()
	for i, p := range []<-chan page{first, second} {
		pg := <-p
		if pg.err != nil {
			t.Fatalf("page %d: %v", i, pg.err)
		}
		if d := publishedDigest(t, skillsOf(t, pg.res)[uri], uri); d != digestOf(lfServed(snap, uri)) {
			t.Errorf("page %d: %s published %s, want the upstream's bytes' %s", i, uri, d, digestOf(lfServed(snap, uri)))
		}
	}
	if n := g.get("resources/read Bearer cut " + uri); n != 1 {
		t.Errorf("%s read %d times for two pages of one context, want 1 (the second guessed the read under way)", uri, n)
	}
}
