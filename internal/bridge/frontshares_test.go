package bridge

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// frontHeaders are the headers that present w to the front fixture.
func frontHeaders(w who, more ...string) map[string]string {
	h := map[string]string{"X-Test-Peer": w.remote}
	if w.auth != "" {
		h["Authorization"] = w.auth
	}
	if w.xff != "" {
		h["X-Forwarded-For"] = w.xff
	}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

// frontInit mints a session for w and returns its id ("" when refused)
// and the reply.
func frontInit(t *testing.T, fx *frontFixture, w who) (string, *http.Response, string) {
	t.Helper()
	resp, body := post(t, fx.url, legacyInit, frontHeaders(w))
	return resp.Header.Get("Mcp-Session-Id"), resp, body
}

// frontRefusedShare checks a reply is a refusal over the caller's share of table.
func frontRefusedShare(t *testing.T, what string, resp *http.Response, body, table string) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, `"caller_share_exhausted"`) || !strings.Contains(body, `"`+table+`"`) {
		t.Errorf("%s past the share: %d Retry-After %q %.200s, want 429 caller_share_exhausted for %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body, table)
	}
}

// TestFrontShares: against the legacy front, one caller (one token, none,
// forged X-Forwarded-For) fills its share of the minted sessions' state
// on this replica, of the subscriptions and of the GET streams, and a
// second caller still gets each; a subscribed URI over MaxSubscriptionURI
// is refused. Minting itself holds nothing, so it is never refused.
func TestFrontShares(t *testing.T) {
	for _, a := range attackers {
		t.Run(a.name, func(t *testing.T) {
			fx := newFrontFixtureShared(t, 8, func(h http.Handler) http.Handler { return h }, func(f *LegacyFront) {
				f.MaxStreams, f.MaxSubscriptions = 8, 8 // shares of 2
			})
			var sids []string
			for i := range 3 {
				sid, resp, body := frontInit(t, fx, a.as(i))
				if sid == "" {
					t.Fatalf("initialize %d: %d %s", i, resp.StatusCode, body)
				}
				sids = append(sids, sid)
			}
			vsid, resp, body := frontInit(t, fx, victim)
			if vsid == "" {
				t.Fatalf("the second caller's initialize: %d %s", resp.StatusCode, body)
			}

			subscribe := func(w who, sid, uri string) (*http.Response, string) {
				return post(t, fx.url, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`,
					frontHeaders(w, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18"))
			}
			// Credentials bind a session: the attacker uses each session
			// with the token it was minted with. A subscription gives the
			// session state here, a place of bridge_sessions.
			for i, uri := range []string{"test://a", "test://b"} {
				if resp, body := subscribe(a.as(i), sids[i], uri); resp.StatusCode != 200 || strings.Contains(body, "error") {
					t.Fatalf("subscribe %s: %d %s", uri, resp.StatusCode, body)
				}
			}
			resp, body = subscribe(a.as(2), sids[2], "test://a")
			frontRefusedShare(t, "a third session's state", resp, body, tableFrontSessions)
			resp, body = subscribe(a.as(0), sids[0], "test://c")
			frontRefusedShare(t, "resources/subscribe", resp, body, tableFrontSubscriptions)
			if resp, body := subscribe(victim, vsid, "test://v"); resp.StatusCode != 200 || strings.Contains(body, "error") {
				t.Errorf("the second caller's subscribe: %d %s", resp.StatusCode, body)
			}
			if _, body := subscribe(victim, vsid, "test://"+strings.Repeat("x", MaxSubscriptionURI)); !strings.Contains(body, "bridge_subscription_uri_too_long") {
				t.Errorf("a subscribed URI over %d bytes: %.200s, want bridge_subscription_uri_too_long", MaxSubscriptionURI, body)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			get := func(w who, sid string) *http.Response {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fx.url, nil)
				for k, v := range frontHeaders(w, "Accept", "text/event-stream", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18") {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { resp.Body.Close() })
				return resp
			}
			for i := range 2 {
				if r := get(a.as(i), sids[i]); r.StatusCode != 200 {
					t.Fatalf("GET %d: %d", i, r.StatusCode)
				}
			}
			r := get(a.as(0), sids[0])
			var b strings.Builder
			buf := make([]byte, 512)
			n, _ := r.Body.Read(buf)
			b.Write(buf[:n])
			frontRefusedShare(t, "GET stream", r, b.String(), tableFrontStreams)
			if r := get(victim, vsid); r.StatusCode != 200 {
				t.Errorf("the second caller's GET stream: %d, want 200", r.StatusCode)
			}
		})
	}
}

// TestFrontSessionSubscriptionCap: one minted session keeps at most
// DefaultMaxFrontSubscriptions subscriptions (the next is refused, the
// table far from full), an unsubscribe makes room, and when the
// session's state ends (DELETE) its places in bridge_subscriptions are
// given back.
func TestFrontSessionSubscriptionCap(t *testing.T) {
	fx := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler { return h })
	sid, resp, body := frontInit(t, fx, victim)
	if sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	h := frontHeaders(victim, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	call := func(method, uri string) (*http.Response, string) {
		return post(t, fx.url, `{"jsonrpc":"2.0","id":3,"method":"`+method+`","params":{"uri":"`+uri+`"}}`, h)
	}
	for i := range DefaultMaxFrontSubscriptions {
		if resp, body := call("resources/subscribe", "test://s/"+strconv.Itoa(i)); resp.StatusCode != 200 || strings.Contains(body, "error") {
			t.Fatalf("subscribe %d: %d %s", i, resp.StatusCode, body)
		}
	}
	// Refused as the session's own bound (TestFrontSessionBoundsRefusedAsTheirOwn).
	if resp, body = call("resources/subscribe", "test://s/past"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a session's subscription past its cap: %d %.200s, want 503", resp.StatusCode, body)
	}
	if resp, body := call("resources/unsubscribe", "test://s/0"); resp.StatusCode != 200 || strings.Contains(body, "error") {
		t.Fatalf("unsubscribe: %d %s", resp.StatusCode, body)
	}
	if resp, body := call("resources/subscribe", "test://s/past"); resp.StatusCode != 200 || strings.Contains(body, "error") {
		t.Errorf("subscribe after an unsubscribe: %d %s", resp.StatusCode, body)
	}
	if n := fx.front.subs.Len(); n != DefaultMaxFrontSubscriptions {
		t.Errorf("bridge_subscriptions holds %d, want %d", n, DefaultMaxFrontSubscriptions)
	}
	req, _ := http.NewRequest(http.MethodDelete, fx.url, nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", r, err)
	}
	if n := fx.front.subs.Len(); n != 0 {
		t.Errorf("bridge_subscriptions holds %d after the session's DELETE, want 0", n)
	}
}
