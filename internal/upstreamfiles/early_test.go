package upstreamfiles_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// The fault tests of the early discovery: a new caller's gate probe and
// discovery run side by side (internal/upstreamfiles/discovery.go, "Early discovery"), so each of
// them may fail while the other succeeds, the upstream may hang up on
// either, and the caller may leave while they run.

// startFaulty starts the test upstream (guessUpstream, serving none of
// the catalog) and a sidecar with the default flags (the auth gate and
// upstream files on) in front of it.
func startFaulty(t *testing.T) (side string, f *guessUpstream) {
	t.Helper()
	snap := discoveryPlugin(t, []string{"a", "b"}, 1)
	upURL, f := startGuessUpstream(t, snap, nil)
	sc := sidecartest.Start(t, upURL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }})
	return sc.URL, f
}

// listAs sends a modern skills/list with id 41 and the bearer token, and
// returns the reply.
func listAs(t *testing.T, side, token string) sidecartest.Reply {
	t.Helper()
	c := &sidecartest.Caller{T: t, Endpoint: side, Modern: true, Token: token}
	return c.CallWith("skills/list", nil, func(_ http.Header, req map[string]any) { req["id"] = 41 })
}

// discoversAgain clears f's fault and checks that token's next page runs a
// discovery of its own (one resources/list): nothing of the failed one
// before it (after what) was kept.
func discoversAgain(t *testing.T, side string, f *guessUpstream, token, what string) {
	t.Helper()
	f.setFault(nil)
	before := f.get("resources/list")
	listAs(t, side, token).OK(t, what, nil)
	if n := f.get("resources/list") - before; n != 1 {
		t.Errorf("the page %s sent %d resources/list, want 1: the failed discovery was kept", what, n)
	}
}

// idOf is the JSON-RPC id a reply carries.
func idOf(t *testing.T, r sidecartest.Reply) string {
	t.Helper()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("reply %s: %v", r.Body, err)
	}
	return string(m.ID)
}

// discoveryGoroutines counts the goroutines running an early discovery
// (or the discovery it runs): after a request's reply none may be left.
func discoveryGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "methods.(*Overlay).startDiscovery") || strings.Contains(g, "methods.(*Overlay).discover") || strings.Contains(g, "methods.(*guesses).read") {
			n++
		}
	}
	return n
}

// noDiscoveryLeft fails the test unless the goroutines of early
// discoveries are gone (they are ended before the reply is written, so a
// short grace is only for the scheduler).
func noDiscoveryLeft(t *testing.T, what string) {
	t.Helper()
	sidecartest.WaitFor(t, time.Minute, func() bool { return discoveryGoroutines() == 0 }, what+": the goroutines of every discovery to end")
}

// refuse401 answers like an upstream refusing a caller without valid
// credentials.
func refuse401(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="faulty"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(`{"error":"invalid_token"}`))
}

// hangUp closes the connection without a reply.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// TestEarlyDiscoveryGateRefuses: the upstream refuses every request made
// with the caller's token, slowly. The caller gets the upstream's refusal
// of its first listing page with its own id, and no probe follows (the
// page needs that listing, so a probe could not change the answer); the
// discovery taken for it is not kept: the same credentials, admitted later, are asked again, not
// answered from what the refused request learned. (Not parallel: it
// counts goroutines of every discovery in the process.)
func TestEarlyDiscoveryGateRefuses(t *testing.T) {
	side, f := startFaulty(t)
	f.setFault(func(method string, w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer refused" {
			return false
		}
		time.Sleep(20 * time.Millisecond)
		refuse401(w)
		return true
	})
	r := listAs(t, side, "refused")
	if r.Status != http.StatusUnauthorized || r.Error == nil || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), `Bearer realm="faulty"`) {
		t.Fatalf("refused caller: HTTP %d, WWW-Authenticate %q, body %s; want the upstream's 401 as a JSON-RPC error", r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
	}
	if id := idOf(t, r); id != "41" {
		t.Errorf("refusal carries id %s, want the caller's 41", id)
	}
	if n, p := f.get("resources/list"), f.get("server/discover Bearer refused"); n != 1 || p != 0 {
		t.Fatalf("the refused caller cost %d resources/list and %d probes, want 1 and 0 (the listing's refusal is the answer)", n, p)
	}
	noDiscoveryLeft(t, "after the refusal")

	f.setFault(nil) // the same credentials are admitted now
	listAs(t, side, "refused").OK(t, "admitted caller", nil)
	if n := f.get("resources/list"); n != 2 {
		t.Errorf("after the refusal the admitted caller's page cost %d resources/list in all, want 2: the refused discovery was reused", n)
	}
	listAs(t, side, "refused").OK(t, "warm caller", nil)
	if n := f.get("resources/list"); n != 2 {
		t.Errorf("a warm page sent resources/list again (%d in all), want the admitted discovery kept", n)
	}
	noDiscoveryLeft(t, "after the pages")
}

// TestFirstListingIsTheProbe: a new caller's first page is admitted on the
// result of its discovery's resources/list (authgate.Gate.Witness), so it
// costs the upstream the two listings and no probe; the admission is the
// gate's, cached as a probe's would be: the caller's next request of
// another method the sidecar answers sends no probe either. A listing
// that is not a result at HTTP 200 admits nothing: the gate probes, and
// the page it admits uses the discovery already run.
func TestFirstListingIsTheProbe(t *testing.T) {
	side, f := startFaulty(t)
	listAs(t, side, "new").OK(t, "new caller's first page", nil)
	if l, tl, p := f.get("resources/list"), f.get("resources/templates/list"), f.get("server/discover Bearer new"); l != 1 || tl != 1 || p != 0 {
		t.Fatalf("a new caller's first page cost %d resources/list, %d resources/templates/list and %d probes, want 1, 1 and 0", l, tl, p)
	}
	c := &sidecartest.Caller{T: t, Endpoint: side, Modern: true, Token: "new"}
	c.Call("agents/list", nil).OK(t, "the admitted caller's agents/list", nil)
	if p := f.get("server/discover Bearer new"); p != 0 {
		t.Errorf("the admitted caller's next request sent %d probes, want the listing's admission cached", p)
	}

	for _, tc := range []struct {
		name  string
		fault func(w http.ResponseWriter, id json.RawMessage)
	}{
		{"a JSON-RPC error", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32603,"message":"busy"}}`))
		}},
		{"a result at HTTP 404", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"resources":[]}}`))
		}},
	} {
		token := "listing-" + strings.ReplaceAll(tc.name, " ", "-")
		f.setFault(func(method string, w http.ResponseWriter, r *http.Request) bool {
			if method != "resources/list" || r.Header.Get("Authorization") != "Bearer "+token {
				return false
			}
			body, _ := io.ReadAll(r.Body)
			m, _ := rewrite.ParseMessage(body)
			tc.fault(w, m.ID)
			return true
		})
		listAs(t, side, token)
		if p := f.get("server/discover Bearer " + token); p != 1 {
			t.Errorf("a listing answered with %s: %d probes, want 1 (it admits nothing)", tc.name, p)
		}
		// The page the probe admitted uses the discovery it started,
		// even one whose listing broke off and is not kept.
		if l := f.get("resources/list Bearer " + token); l != 1 {
			t.Errorf("a listing answered with %s: the page sent %d resources/list, want 1 (one discovery)", tc.name, l)
		}
	}
	noDiscoveryLeft(t, "after the pages")
}

// TestEarlyDiscoveryFailsGateAdmits: the gate admits, the discovery's
// resources/list fails (a 500, then a hang-up). The caller gets an error
// with its own id, not a page built on a guess, and the failed discovery
// is not kept: the next request asks again and gets the page.
func TestEarlyDiscoveryFailsGateAdmits(t *testing.T) {
	side, f := startFaulty(t)
	for i, fault := range []func(http.ResponseWriter){
		func(w http.ResponseWriter) { http.Error(w, "listing broke", http.StatusInternalServerError) },
		hangUp,
	} {
		f.setFault(func(method string, w http.ResponseWriter, _ *http.Request) bool {
			if method != "resources/list" {
				return false
			}
			fault(w)
			return true
		})
		r := listAs(t, side, "admitted")
		if r.Error == nil || r.Status == http.StatusOK && r.Result != nil {
			t.Fatalf("fault %d: HTTP %d, body %s; want an error", i, r.Status, r.Body)
		}
		if id := idOf(t, r); id != "41" {
			t.Errorf("fault %d: error carries id %s, want the caller's 41", i, id)
		}
		noDiscoveryLeft(t, "after the failed discovery")
	}
	discoversAgain(t, side, f, "admitted", "after the faults")
}

// TestEarlyDiscoveryUpstreamHangsUp: the upstream closes the connection of
// every request with the caller's token without a reply. The listing
// admits nothing, the gate's probe hangs up too, and the caller gets the
// gate's upstream-unreachable error with its own id; nothing is kept of
// the discovery beside it.
func TestEarlyDiscoveryUpstreamHangsUp(t *testing.T) {
	side, f := startFaulty(t)
	f.setFault(func(method string, w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer hung-up" {
			return false
		}
		time.Sleep(20 * time.Millisecond)
		hangUp(w)
		return true
	})
	r := listAs(t, side, "hung-up")
	if r.Status != http.StatusBadGateway || r.Error == nil {
		t.Fatalf("upstream hung up: HTTP %d, body %s; want 502 with a JSON-RPC error", r.Status, r.Body)
	}
	if id := idOf(t, r); id != "41" {
		t.Errorf("error carries id %s, want the caller's 41", id)
	}
	noDiscoveryLeft(t, "after the hang-up")
	discoversAgain(t, side, f, "hung-up", "after the hang-up")
}

// TestEarlyDiscoveryCallerLeaves: the caller goes away while the listing
// is held at the upstream. The discovery's requests are cancelled (the
// upstream sees its request end), no goroutine of it is left, and the next
// caller of the context runs a discovery of its own.
func TestEarlyDiscoveryCallerLeaves(t *testing.T) {
	side, f := startFaulty(t)
	arrived := make(chan struct{}, 1)
	ended := make(chan struct{}, 1)
	f.setFault(func(method string, _ http.ResponseWriter, r *http.Request) bool {
		if method != "resources/list" {
			return false
		}
		arrived <- struct{}{}
		select {
		case <-r.Context().Done(): // the sidecar gave up the request
			ended <- struct{}{}
		case <-time.After(10 * time.Second):
		}
		return true
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":41,"method":"skills/list","params":{"_meta":{"` + sidecartest.MetaVersionKey + `":"` + sidecartest.ModernVersion + `","` + sidecartest.MetaCapsKey + `":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, side, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", sidecartest.ModernVersion)
		req.Header.Set("Mcp-Method", "skills/list")
		req.Header.Set("Authorization", "Bearer leaving")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the discovery's resources/list never reached the upstream")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled request got a reply")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's resources/list was not cancelled when the caller left")
	}
	noDiscoveryLeft(t, "after the caller left")
	f.setFault(nil)
	listAs(t, side, "leaving").OK(t, "the next caller of the context", nil)
	if n := f.get("resources/list"); n != 2 {
		t.Errorf("resources/list sent %d times, want 2: the abandoned discovery and a new one", n)
	}
	noDiscoveryLeft(t, "after the next page")
}

// TestEarlyDiscoveryShared: concurrent first requests of one context,
// behind the gate, share one discovery, started early by the first of
// them, whichever of their probes answers first.
func TestEarlyDiscoveryShared(t *testing.T) {
	side, f := startFaulty(t)
	f.setFault(func(method string, _ http.ResponseWriter, _ *http.Request) bool {
		if strings.HasPrefix(method, "resources/") {
			time.Sleep(20 * time.Millisecond) // the callers overlap
		}
		return false
	})
	const callers = 16
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = callAs(side, map[string]string{"Authorization": "Bearer shared"}, "skills/list", nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if l, tl := f.get("resources/list"), f.get("resources/templates/list"); l != 1 || tl != 1 {
		t.Errorf("%d concurrent first requests of one context sent %d resources/list and %d resources/templates/list, want 1 and 1", callers, l, tl)
	}
	noDiscoveryLeft(t, "after the pages")
}
