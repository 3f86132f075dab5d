package main

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBridgedModernClientGetsChangeNotifications: a default go-sdk client
// in front of a legacy-only upstream negotiates 2026-07-28 through the era
// bridge and listens with subscriptions/listen; a plugin change reaches it
// as notifications/resources/list_changed exactly once, as it reaches a
// legacy client on its GET stream.
func TestBridgedModernClientGetsChangeNotifications(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := filepath.Join(t.TempDir(), "plugin")
	v1, v2 := notesPlugin()
	swap := kubeletPlugin(t, root, v1)
	endpoint, _ := startSidecar(t, "--upstream", churnUpstream(t, false), "--plugin-dir", root,
		"--poll-interval", "200ms", "--auth-gate", "none", "--era-bridge", "auto")
	var changed, tools atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed.Add(1) },
		// The upstream adds a tool every 15 ms: its notices show the
		// listen stream open, end to end.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { tools.Add(1) },
	})
	// The bridge learns the upstream's eras at start; until it has, a
	// client negotiates the legacy era. Connect until it gets the modern one.
	var cs *mcp.ClientSession
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if s.InitializeResult().ProtocolVersion == scrapeVersion {
			cs = s
			break
		}
		s.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the client never negotiated %s through the bridge", scrapeVersion)
		}
	}
	defer cs.Close()
	// The client opens its listen stream after connecting: the plugin
	// changes once the upstream's own notices arrive on it.
	for deadline := time.Now().Add(10 * time.Second); tools.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no tools/list_changed from the churning upstream reached the client: its listen stream never opened")
		}
	}
	if n := changed.Load(); n != 0 {
		t.Fatalf("%d list_changed before any change", n)
	}
	swap(v2)
	for deadline := time.Now().Add(3 * time.Second); changed.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // room for a duplicate to show
	if n := changed.Load(); n != 1 {
		t.Errorf("the bridged modern client's ResourceListChangedHandler ran %d times after one change, want 1", n)
	}
}
