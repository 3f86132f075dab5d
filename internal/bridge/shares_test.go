package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// Attack tests of the per-caller shares (docs/security.md): one caller,
// with one token, with none, or forging X-Forwarded-For, fills its share
// of each table the bridge keeps, and a second caller is still served.

// who is how a request presents its caller.
type who struct {
	remote, auth, xff string
}

// attackers are one caller each, presenting itself afresh for request i.
var attackers = []struct {
	name string
	as   func(i int) who
}{
	{"one token", func(i int) who { return who{remote: fmt.Sprintf("192.0.2.%d:1000", i+1), auth: "Bearer attacker"} }},
	{"no token", func(int) who { return who{remote: "192.0.2.1:1000"} }},
	{"forged X-Forwarded-For", func(i int) who { return who{remote: "192.0.2.1:1000", xff: fmt.Sprintf("203.0.113.%d", i+1)} }},
}

// victim is the second caller: another address, no token.
var victim = who{remote: "198.51.100.9:2000"}

// sharedPost is a 2026-07-28 request of method from w, with clientCapabilities
// caps and params (without _meta, a trailing comma when not empty).
func sharedPost(ctx context.Context, u string, w who, method, caps, params string) *http.Request {
	body := `{"jsonrpc":"2.0","id":"s1","method":"` + method + `","params":{` + params + fmt.Sprintf(testMeta, caps) + `}}`
	req := modernPost(ctx, u, method, body)
	req.RemoteAddr = w.remote
	if w.auth != "" {
		req.Header.Set("Authorization", w.auth)
	}
	if w.xff != "" {
		req.Header.Set("X-Forwarded-For", w.xff)
	}
	return req
}

// shareRefused checks that resp is a refusal over a caller's share of table.
func shareRefused(t *testing.T, resp *http.Response, table string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	var got struct {
		Error struct {
			Data struct{ Reason, Table string } `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &got)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		got.Error.Data.Reason != "caller_share_exhausted" || got.Error.Data.Table != table {
		t.Errorf("past its share: %d Retry-After %q %.200s, want 429 with Retry-After, caller_share_exhausted, table %s",
			resp.StatusCode, resp.Header.Get("Retry-After"), b, table)
	}
}

// TestShareOfHeldSessions: one caller holding its share of sessions busy
// (a call in flight on each, a new capability set each time) is refused
// its next session; another caller still gets one.
func TestShareOfHeldSessions(t *testing.T) {
	for _, a := range attackers {
		t.Run(a.name, func(t *testing.T) {
			started, release := make(chan struct{}, 8), make(chan struct{})
			s := slowServer(started, release)
			bt, u := newBridge(t, testupstream.Handler(s, nil), 8)
			defer close(release)
			share := bt.h.sessions.Share() // 2 of 8
			for i := range share {
				go func() {
					req := sharedPost(t.Context(), u, a.as(i), "tools/call", fmt.Sprintf(`{"x%d":{}}`, i), `"name":"slow","arguments":{},`)
					req.Header.Set("Mcp-Name", "slow")
					if resp, err := roundTrip(bt, req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatal("slow call never started")
				}
			}
			resp, err := roundTrip(bt, sharedPost(t.Context(), u, a.as(share), "tools/list", `{"x99":{}}`, ""))
			if err != nil {
				t.Fatal(err)
			}
			shareRefused(t, resp, tableSessions)
			resp.Body.Close()
			resp, err = roundTrip(bt, sharedPost(t.Context(), u, victim, "tools/list", "{}", ""))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 {
				t.Errorf("the second caller's tools/list: %d, want 200", resp.StatusCode)
			}
			resp.Body.Close()
		})
	}
}

// TestShareOfListens: anonymous callers do not share one listen budget,
// and one caller fills only its share of it.
func TestShareOfListens(t *testing.T) {
	for _, a := range attackers {
		t.Run(a.name, func(t *testing.T) {
			s := slowServer(make(chan struct{}, 1), nil)
			bt, u := newBridge(t, testupstream.Handler(s, nil), 16)
			listen := func(w who, i int) *http.Response {
				resp, err := roundTrip(bt, sharedPost(t.Context(), u, w, "subscriptions/listen", fmt.Sprintf(`{"x%d":{}}`, i), `"notifications":{"toolsListChanged":true},`))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { resp.Body.Close() })
				return resp
			}
			share := bt.h.listens.Share() // 2 of 8
			for i := range share {
				if r := listen(a.as(i), i); r.StatusCode != 200 {
					t.Fatalf("listen %d: %d", i, r.StatusCode)
				}
			}
			shareRefused(t, listen(a.as(share), share), tableListens)
			if r := listen(victim, 0); r.StatusCode != 200 {
				t.Errorf("the second caller's listen: %d, want 200", r.StatusCode)
			}
		})
	}
}

// TestShareOfPendingCalls: one caller leaving its share of calls waiting
// for input is refused the next (an error event on its stream: the status
// is sent already), and another caller's call still waits for its input.
func TestShareOfPendingCalls(t *testing.T) {
	for _, a := range attackers {
		t.Run(a.name, func(t *testing.T) {
			srv := mrtrUpstream(t, make(chan error, 8))
			bt := &Transport{Next: srv.Client().Transport, Credentials: []string{"Authorization"}, MaxPending: 8, PendingTimeout: time.Minute,
				Eras: func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} }}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bt.Start(ctx)
			sample := func(w who, i int) string {
				req := sharedPost(t.Context(), srv.URL, w, "tools/call", `{"sampling":{}}`, `"name":"sample","arguments":{"n":`+fmt.Sprint(i)+`},`)
				req.Header.Set("Mcp-Name", "sample")
				resp, err := roundTrip(bt, req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
			share := bt.pending.places.Share() // 2 of 8
			for i := range share {
				if r := sample(a.as(i), i); !strings.Contains(r, `"input_required"`) {
					t.Fatalf("call %d: %.300s, want input_required", i, r)
				}
			}
			if r := sample(a.as(share), share); !strings.Contains(r, `"caller_share_exhausted"`) || !strings.Contains(r, `"bridge_pending"`) {
				t.Errorf("call past the share: %.300s, want caller_share_exhausted for bridge_pending", r)
			}
			if r := sample(victim, 0); !strings.Contains(r, `"input_required"`) {
				t.Errorf("the second caller's call: %.300s, want input_required", r)
			}
		})
	}
}
