package bridge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// An upstream that authenticates its callers by bearer token ignores
// their cookies, as most do; Cookie is one of the default auth-headers all
// the same. One caller holding a valid token must not become a new caller,
// with a share of its own, each time it sends another cookie
// (docs/security.md: one client must never "become many clients by
// changing what it sends").
func TestShareNotEscapedByInventedCookie(t *testing.T) {
	s := slowServer(make(chan struct{}, 1), nil)
	next := testupstream.Handler(s, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	creds := []string{"Authorization", "Cookie"}
	bt := &Transport{Next: srv.Client().Transport, Credentials: creds, MaxSessions: 16,
		Callers: &caller.Resolver{Credentials: creds},
		Eras:    func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bt.Start(ctx)
	share := bt.h.listens.Share()
	for i := range share + 4 {
		w := who{remote: "192.0.2.1:1000", auth: "Bearer good"}
		req := sharedPost(t.Context(), srv.URL, w, "subscriptions/listen", "{}", `"notifications":{"toolsListChanged":true},`)
		req.Header.Set("Cookie", fmt.Sprintf("junk=%d", i))
		resp, err := roundTrip(bt, req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if i >= share && resp.StatusCode == http.StatusOK {
			t.Fatalf("listen %d of one token with a new cookie each time: 200, want 429 past the caller's share of %d", i+1, share)
		}
	}
}
