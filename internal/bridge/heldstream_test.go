package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// heldStreams serves a legacy server's POSTs and DELETEs, answers every
// GET itself with a stream it keeps open until the client ends it (as a
// server whose DELETE does not end the stream), counting them, and
// answers 404 to the POSTs on the session named forgotten (a server that
// forgot it).
type heldStreams struct {
	next           http.Handler
	opened, active atomic.Int32
	mu             sync.Mutex
	last           string // the session of the last GET
	forgotten      string
	stop           chan struct{} // closed at the test's end: a stream left open ends
}

func (h *heldStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	h.mu.Lock()
	forgotten := sid != "" && sid == h.forgotten
	if r.Method == http.MethodGet {
		h.last = sid
	}
	h.mu.Unlock()
	switch {
	case r.Method == http.MethodGet:
		h.opened.Add(1)
		h.active.Add(1)
		defer h.active.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
	case forgotten && r.Method == http.MethodPost:
		http.Error(w, "session not found", http.StatusNotFound)
	default:
		h.next.ServeHTTP(w, r)
	}
}

// TestHeldSessionStreamEndsWithSession: the GET stream the bridge holds
// for a session it keeps for modern callers is the bridge's to end: it
// ends when the session is dropped, whichever way, and not only when the
// upstream ends it on DELETE: evicted for another caller's session,
// reopened after the upstream forgot it (404), and at shutdown. The
// upstream counts the streams open; a stream left open is a connection
// and a goroutine per session dropped.
func TestHeldSessionStreamEndsWithSession(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "held", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hi", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
	})
	up := &heldStreams{next: testupstream.Handler(s, nil), stop: make(chan struct{})}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(up.stop) }) // before srv.Close, which waits for every stream
	bt := &Transport{Next: srv.Client().Transport, Credentials: []string{"Authorization"}, MaxSessions: 1,
		Eras: func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} }}
	ctx, shutdown := context.WithCancel(context.Background())
	t.Cleanup(shutdown)
	bt.Start(ctx)
	u := srv.URL
	streams := func(what string, opened, active int32) {
		t.Helper()
		testwait.For(t, 20*time.Second, func() bool { return up.opened.Load() == opened && up.active.Load() == active },
			what+": the upstream's GET streams opened and open")
	}
	hi := func(auth string) {
		t.Helper()
		if r := modernCall(t, bt, u, auth, "1", "hi", `{}`, ""); r.Error != nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "hi" {
			t.Fatalf("tools/call as %s = %+v %+v, want hi", auth, r.Error, r.Result)
		}
	}
	hi("Bearer a")
	streams("a's session", 1, 1)
	hi("Bearer b") // one place: a's session is evicted
	streams("b's session, a's evicted", 2, 1)
	up.mu.Lock()
	up.forgotten = up.last
	up.mu.Unlock()
	hi("Bearer b") // 404: b's session is reopened
	streams("b's session reopened", 3, 1)
	shutdown()
	streams("shutdown", 3, 0)
}
