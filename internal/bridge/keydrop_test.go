package bridge

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionkeys"
)

// TestLegacyFrontKeyDropEndsSessions: dropping a key from the keys file
// ends every session it sealed on this replica at once, as the rotation
// documents: the session's open GET stream ends and its state here (its
// subscriptions) is given back, and its next request is 404, on which a
// legacy client initializes again (2025-11-25 Streamable HTTP, session
// management). A session sealed with a key still held is left alone.
func TestLegacyFrontKeyDropEndsSessions(t *testing.T) {
	a, b := sessionid.EncodeKey(sessionid.NewRandomKey()), sessionid.EncodeKey(sessionid.NewRandomKey())
	dir := filepath.Join(t.TempDir(), "session-keys")
	write := func(lines ...string) {
		t.Helper()
		// As the kubelet updates a Secret volume: a symlink swap.
		if err := kubeletvolume.Write(dir, map[string][]byte{"keys": []byte(strings.Join(lines, "\n") + "\n")}); err != nil {
			t.Fatal(err)
		}
	}
	write(a, b)
	src, err := sessionkeys.Open(filepath.Join(dir, "keys"), sessionkeys.Options{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go src.Run(ctx)
	// reloaded waits (bounded: a hang guard) for the Source to take a
	// file just written.
	reloaded := func(before *sessionid.Keys) {
		t.Helper()
		for i := 0; src.Keys() == before; i++ {
			if i > 10000 {
				t.Fatal("the keys file was not read again")
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A tools/call of "held" is held upstream until its request ends.
	arrived, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	hold := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Name") != "held" {
				h.ServeHTTP(w, r)
				return
			}
			_, _ = io.Copy(io.Discard, r.Body) // the server watches the connection once the body is read
			arrived <- struct{}{}
			select {
			case <-r.Context().Done():
				cancelled <- struct{}{}
			case <-ctx.Done():
			}
		})
	}
	fx := newFrontFixtureWith(t, 0, hold, func(f *LegacyFront) {
		f.Keys = src.Keys
		f.KeysChanged = src.Changed
	})
	bearer := map[string]string{"Authorization": "Bearer alice"}
	mint := func() string {
		t.Helper()
		resp, body := post(t, fx.url, legacyInit, bearer)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		return sid
	}
	with := func(sid string) map[string]string {
		return map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18", "Authorization": "Bearer alice"}
	}
	open := func(sid string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fx.url, nil)
		for k, v := range with(sid) {
			req.Header.Set(k, v)
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: HTTP %d", resp.StatusCode)
		}
		return resp
	}
	sidA := mint() // sealed with a
	before := src.Keys()
	write(b, a) // promoted: b seals, a still opens
	reloaded(before)
	sidB := mint() // sealed with b
	subscribe := `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///x"}}`
	for _, sid := range []string{sidA, sidB} {
		if resp, body := post(t, fx.url, subscribe, with(sid)); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Fatalf("resources/subscribe: %d %s", resp.StatusCode, body)
		}
	}
	streamA, streamB := open(sidA), open(sidB)
	go func() { // its outcome is the upstream's to see: cancelled below
		call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"held","arguments":{}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fx.url, strings.NewReader(call))
		for k, v := range with(sidA) {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the held tools/call did not reach the upstream")
	}
	if n := fx.front.Sessions(); n != 2 {
		t.Fatalf("%d sessions hold state here, want 2", n)
	}

	before = src.Keys()
	write(b) // a dropped
	reloaded(before)

	// a's stream ends; the read is bounded by a hang guard only.
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, streamA.Body); ended <- err }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("the GET stream of a session whose key was dropped is still open")
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Error("a request under way of a session whose key was dropped is still held upstream")
	}
	if n := fx.front.Sessions(); n != 1 {
		t.Errorf("%d sessions hold state here after a's key was dropped, want 1 (b's)", n)
	}
	if subs := fx.front.subs.Len(); subs != 1 {
		t.Errorf("%d subscriptions held after a's key was dropped, want 1 (b's)", subs)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp, body := post(t, fx.url, list, with(sidA)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the dropped key's session: %d %s, want 404", resp.StatusCode, body)
	}
	if resp, body := post(t, fx.url, list, with(sidB)); resp.StatusCode != http.StatusOK {
		t.Errorf("a request of the kept key's session: %d %s, want 200", resp.StatusCode, body)
	}
	_ = streamB // held open to the end: its session keeps its state
}

// TestLegacyFrontKeyDropRacesARequest: a key dropped, and the sweep that
// follows, between a request opening its session's id and the front
// making the session's state or registering its call, must not leave a
// session of the dropped key holding state (a GET stream), places, or a
// request under way here: the id opens no more, so the request is 404
// (2025-11-25 Streamable HTTP, session management), as it is when the
// drop comes first. The hook runs the reload and its sweep at exactly
// that point: Keys is read by the request's lookup only.
func TestLegacyFrontKeyDropRacesARequest(t *testing.T) {
	ka, err := sessionid.NewKeys(sessionid.NewRandomKey())
	if err != nil {
		t.Fatal(err)
	}
	kb, err := sessionid.NewKeys(sessionid.NewRandomKey())
	if err != nil {
		t.Fatal(err)
	}
	var cur atomic.Pointer[sessionid.Keys]
	cur.Store(ka)
	var hook atomic.Pointer[func()]
	var reached atomic.Int32 // tools/call requests that reached the upstream
	count := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Method") == "tools/call" {
				reached.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
	fx := newFrontFixtureWith(t, 0, count, func(f *LegacyFront) {
		f.Keys = func() *sessionid.Keys {
			k := cur.Load()
			if h := hook.Swap(nil); h != nil {
				(*h)()
			}
			return k
		}
	})
	bearer := map[string]string{"Authorization": "Bearer alice"}
	with := func(sid string) map[string]string {
		return map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18", "Authorization": "Bearer alice"}
	}
	for name, send := range map[string]func(sid string) int{
		"GET stream": func(sid string) int {
			req, _ := http.NewRequest(http.MethodGet, fx.url, nil)
			for k, v := range with(sid) {
				req.Header.Set(k, v)
			}
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		},
		"resources/subscribe": func(sid string) int {
			resp, _ := post(t, fx.url, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///x"}}`, with(sid))
			return resp.StatusCode
		},
		"tools/call": func(sid string) int {
			resp, _ := post(t, fx.url, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, with(sid))
			return resp.StatusCode
		},
	} {
		cur.Store(ka)
		resp, body := post(t, fx.url, legacyInit, bearer)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || sid == "" {
			t.Fatalf("%s: initialize: %d %s", name, resp.StatusCode, body)
		}
		reached.Store(0)
		drop := func() { cur.Store(kb); fx.front.sweep() }
		hook.Store(&drop)
		if code := send(sid); code != http.StatusNotFound {
			t.Errorf("%s of a session whose key was dropped as it was opened: HTTP %d, want 404", name, code)
		}
		if hook.Load() != nil {
			t.Fatalf("%s: the request did not open its id", name)
		}
		if n := fx.front.Sessions(); n != 0 {
			t.Errorf("%s: %d sessions hold state here, want 0", name, n)
		}
		if n := reached.Load(); n != 0 {
			t.Errorf("%s: %d requests of a dropped key's session reached the upstream, want 0", name, n)
		}
		fx.front.sweep() // what the race left, if anything, ends before the next case
	}
}

// TestLegacyFrontKeyDropDuringASweep: a change of the keys while the front
// sweeps for the change before it (Keys read, the session kept) is not
// missed: the front sweeps again, and the session of the key dropped ends
// without waiting for the idle sweep. KeysChanged behaves as
// sessionkeys.Source.Changed does (a channel closed, and replaced, on
// each change); the second change is made inside the first sweep.
func TestLegacyFrontKeyDropDuringASweep(t *testing.T) {
	a := sessionid.EncodeKey(sessionid.NewRandomKey())
	b := sessionid.EncodeKey(sessionid.NewRandomKey())
	both, err := sessionid.ParseKeys([]byte(a + "\n" + b + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	promoted, err := sessionid.ParseKeys([]byte(b + "\n" + a + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	bAlone, err := sessionid.ParseKeys([]byte(b + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var cur atomic.Pointer[sessionid.Keys]
	cur.Store(both)
	var mu sync.Mutex
	ch := make(chan struct{})
	change := func(k *sessionid.Keys) { // as sessionkeys.Source.reload
		mu.Lock()
		defer mu.Unlock()
		cur.Store(k)
		close(ch)
		ch = make(chan struct{})
	}
	var hook atomic.Pointer[func()]
	fx := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler { return h }, func(f *LegacyFront) {
		f.Keys = func() *sessionid.Keys {
			k := cur.Load()
			if h := hook.Swap(nil); h != nil {
				(*h)()
			}
			return k
		}
		f.KeysChanged = func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return ch }
	})
	resp, body := post(t, fx.url, legacyInit, map[string]string{"Authorization": "Bearer alice"})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	with := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18", "Authorization": "Bearer alice"}
	if resp, body := post(t, fx.url, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///x"}}`, with); resp.StatusCode != http.StatusOK {
		t.Fatalf("resources/subscribe: %d %s", resp.StatusCode, body)
	}
	if n := fx.front.Sessions(); n != 1 {
		t.Fatalf("%d sessions hold state here, want 1", n)
	}
	// The first change promotes b (a still opens); the sweep it starts
	// reads those keys, and a is dropped as it does.
	swept := make(chan struct{})
	drop := func() { change(bAlone); close(swept) }
	hook.Store(&drop)
	change(promoted)
	select {
	case <-swept:
	case <-time.After(10 * time.Second): // a hang guard
		t.Fatal("the first change started no sweep")
	}
	for i := 0; fx.front.Sessions() != 0; i++ {
		if i > 1000 { // a hang guard: the idle sweep is an hour away
			t.Fatal("the session of the key dropped during a sweep still holds state here")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
