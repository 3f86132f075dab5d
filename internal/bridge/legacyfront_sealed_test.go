package bridge

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
)

// sharedKeys is a front option: the keys every replica of a test shares.
func sharedKeys(k *sessionid.Keys) func(*LegacyFront) {
	return func(f *LegacyFront) { f.Keys = func() *sessionid.Keys { return k } }
}

// TestLegacyFrontSealedSessions: a session minted by one front is served
// by another holding the same key; an id tampered with, presented with
// other credentials, expired, or sealed under another key is 404 as the
// transport says (2025-11-25 Streamable HTTP, session management: the
// client then initializes again); DELETE revokes on the replica that got
// it only.
func TestLegacyFrontSealedSessions(t *testing.T) {
	k, _ := sessionid.NewKeys(sessionid.NewRandomKey())
	a := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler { return h }, sharedKeys(k))
	b := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler { return h }, sharedKeys(k))
	other := newFrontFixture(t, 0) // a key of its own
	bearer := map[string]string{"Authorization": "Bearer alice"}
	resp, body := post(t, a.url, legacyInit, bearer)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize on A: %d %s", resp.StatusCode, body)
	}
	if len(sid) > sessionid.MaxLen {
		t.Errorf("session id of %d characters, over the documented %d", len(sid), sessionid.MaxLen)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	with := func(id string, kv ...string) map[string]string {
		h := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18", "Authorization": "Bearer alice"}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	for name, fx := range map[string]*frontFixture{"A": a, "B": b} {
		if resp, body := post(t, fx.url, list, with(sid)); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"add"`) {
			t.Errorf("tools/list on %s: %d %s", name, resp.StatusCode, body)
		}
	}
	tampered := []byte(sid)
	tampered[len(tampered)/2] ^= 1 // one bit of one byte: still base64url
	for name, c := range map[string]struct {
		fx *frontFixture
		h  map[string]string
	}{
		"tampered by one byte":    {b, with(string(tampered))},
		"another caller":          {b, with(sid, "Authorization", "Bearer mallory")},
		"no credentials":          {b, map[string]string{"Mcp-Session-Id": sid}},
		"a replica with no key":   {other, with(sid)},
		"an id longer than a max": {b, with(strings.Repeat("A", sessionid.MaxLen+1))},
	} {
		if resp, body := post(t, c.fx.url, list, c.h); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "Session not found") {
			t.Errorf("%s: %d %s, want 404", name, resp.StatusCode, body)
		}
	}
	// DELETE on A: A refuses the id from now on; B, which never heard of
	// it, serves it until it expires (documented).
	req, _ := http.NewRequest(http.MethodDelete, a.url, nil)
	for k, v := range with(sid) {
		req.Header.Set(k, v)
	}
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE on A: %v %v", r, err)
	}
	if resp, _ := post(t, a.url, list, with(sid)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("tools/list on A after DELETE: %d, want 404", resp.StatusCode)
	}
	if resp, _ := post(t, b.url, list, with(sid)); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list on B after DELETE on A: %d, want 200 until the id expires", resp.StatusCode)
	}
	// Expired: past the lifetime, on every replica.
	b.advance(DefaultFrontLifetime)
	if resp, _ := post(t, b.url, list, with(sid)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("tools/list on B at the session's expiry: %d, want 404", resp.StatusCode)
	}
	a.advance(DefaultFrontLifetime)
	a.front.sweep()
	a.front.mu.Lock()
	revoked := len(a.front.revoked)
	a.front.mu.Unlock()
	if revoked != 0 {
		t.Errorf("A remembers %d revoked ids past their expiry, want 0", revoked)
	}
}

// TestLegacyFrontStateTooLarge: capabilities and clientInfo that do not
// fit in an id are refused at initialize, clearly, and no session is
// minted; the upstream is not asked.
func TestLegacyFrontStateTooLarge(t *testing.T) {
	var asked atomic.Int64
	fx := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked.Add(1); h.ServeHTTP(w, r) })
	})
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` +
		strings.Repeat("x", sessionid.MaxState) + `","version":"1"}}}`
	resp, body := post(t, fx.url, big, nil)
	if resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(body, "session_state_too_large") || !strings.Contains(body, "-32602") {
		t.Fatalf("initialize with a huge clientInfo: %d %s %q", resp.StatusCode, body, resp.Header.Get("Mcp-Session-Id"))
	}
	if asked.Load() != 0 {
		t.Errorf("the upstream was asked %d times for a session that cannot be minted", asked.Load())
	}
	// Whitespace does not count: the state is kept compact.
	spaced := strings.Replace(legacyInit, `"clientInfo":{`, `"clientInfo":{`+strings.Repeat(" ", sessionid.MaxState), 1)
	if resp, body := post(t, fx.url, spaced, nil); resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize with a spaced clientInfo: %d %s", resp.StatusCode, body)
	}
}

// TestLegacyFrontRevokedCap: a replica remembers at most MaxRevoked ids
// ended by DELETE; past it DELETE still answers 204 and the id opens until
// it expires (documented), and an expired revocation makes room.
func TestLegacyFrontRevokedCap(t *testing.T) {
	fx := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler { return h }, func(f *LegacyFront) { f.MaxRevoked = 1 })
	mint := func() string {
		resp, body := post(t, fx.url, legacyInit, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	del := func(sid string) {
		req, _ := http.NewRequest(http.MethodDelete, fx.url, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %v %v", r, err)
		}
	}
	status := func(sid string) int {
		resp, _ := post(t, fx.url, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
		return resp.StatusCode
	}
	a := mint()
	fx.advance(time.Hour) // b expires an hour after a
	b := mint()
	del(a)
	del(b)
	if got := status(a); got != http.StatusNotFound {
		t.Errorf("ping in the first deleted session: %d, want 404", got)
	}
	if got := status(b); got != http.StatusOK {
		t.Errorf("ping in a session deleted past the cap: %d, want 200 (not remembered)", got)
	}
	fx.advance(DefaultFrontLifetime - 30*time.Minute) // a expired, b not
	c := mint()
	del(c)
	if got := status(c); got != http.StatusNotFound {
		t.Errorf("ping in a session deleted once a's revocation expired: %d, want 404", got)
	}
}

// TestLegacyFrontShares: one caller holds at most its share of the
// sessions with state on a replica (429 with Retry-After past it, not
// 503) while another caller still gets a place; its revocations past its
// share are not remembered, another caller's are.
func TestLegacyFrontShares(t *testing.T) {
	fx := newFrontFixtureWith(t, 4, func(h http.Handler) http.Handler { return h }, func(f *LegacyFront) { f.MaxRevoked, f.SharePercent = 4, 25 }) // shares of 1
	session := func(token string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + token}
		resp, body := post(t, fx.url, legacyInit, h)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
		return h
	}
	setLevel := `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`
	a1, a2, b := session("a"), session("a"), session("b")
	if resp, body := post(t, fx.url, setLevel, a1); resp.StatusCode != http.StatusOK {
		t.Fatalf("caller a's first state: %d %s", resp.StatusCode, body)
	}
	resp, body := post(t, fx.url, setLevel, a2)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "caller_share_exhausted") {
		t.Errorf("caller a past its share: %d (Retry-After %q) %s; want 429 caller_share_exhausted", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, body := post(t, fx.url, setLevel, b); resp.StatusCode != http.StatusOK {
		t.Errorf("caller b while a holds its share: %d %s", resp.StatusCode, body)
	}
	del := func(h map[string]string) {
		req, _ := http.NewRequest(http.MethodDelete, fx.url, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %v %v", r, err)
		}
	}
	ping := func(h map[string]string) int {
		resp, _ := post(t, fx.url, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, h)
		return resp.StatusCode
	}
	del(a1)
	del(a2)
	del(b)
	if got := []int{ping(a1), ping(a2), ping(b)}; got[0] != 404 || got[1] != 200 || got[2] != 404 {
		t.Errorf("pings after DELETE (a's first, a's second past its share, b's) = %v, want [404 200 404]", got)
	}
}
