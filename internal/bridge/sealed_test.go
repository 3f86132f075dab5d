package bridge

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestSealedFromHeldSession: nothing of the legacy session the bridge
// holds reaches the 2026-07-28 caller it serves: not its Mcp-Session-Id,
// not the upstream's Access-Control-* exposure of it, not the event ids of
// its streams (a go-sdk server with an event store numbers every event).
func TestSealedFromHeldSession(t *testing.T) {
	s := slowServer(make(chan struct{}, 1), make(chan struct{}))
	h := testupstream.Handler(s, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	cors := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id")
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			w.Header().Set("Mcp-Session-Id", sid) // as some servers echo it on every reply
		}
		h.ServeHTTP(w, r)
	})
	bt, u := newBridge(t, cors, 0)
	for _, method := range []string{"tools/list", "server/discover", "prompts/list"} {
		req := sharedPost(t.Context(), u, victim, method, "{}", "")
		resp, err := roundTrip(bt, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		}
		for k := range resp.Header {
			if k == "Mcp-Session-Id" || strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s: the reply carries the held session's %s: %q", method, k, resp.Header.Get(k))
			}
		}
		if body := "\n" + string(b); strings.Contains(body, "\nid:") {
			t.Errorf("%s: the reply carries the held session's event ids: %q", method, b)
		}
	}
	// The listen stream, opened on a session of its own, alike.
	resp, err := roundTrip(bt, sharedPost(t.Context(), u, victim, "subscriptions/listen", "{}", `"notifications":{"toolsListChanged":true},`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for k := range resp.Header {
		if k == "Mcp-Session-Id" || strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("listen: the reply carries the held session's %s", k)
		}
	}
}
