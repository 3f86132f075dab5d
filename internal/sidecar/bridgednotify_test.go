package sidecar_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
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
	endpoint := startFolder(t, churnUpstream(t, false), root, func(c *config.Config) { polled(c); c.EraBridge = "auto" })
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
	sidecartest.WaitFor(t, time.Minute, func() bool {
		s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if s.InitializeResult().ProtocolVersion == modernVersion {
			cs = s
			return true
		}
		s.Close()
		return false
	}, "the client to negotiate "+modernVersion+" through the bridge")
	defer cs.Close()
	// The client opens its listen stream after connecting: the plugin
	// changes once the upstream's own notices arrive on it.
	sidecartest.WaitFor(t, time.Minute, func() bool { return tools.Load() > 0 },
		"a tools/list_changed from the churning upstream to reach the client (its listen stream to open)")
	if n := changed.Load(); n != 0 {
		t.Fatalf("%d list_changed before any change", n)
	}
	swap(v2)
	sidecartest.WaitFor(t, time.Minute, func() bool { return changed.Load() > 0 },
		"the bridged modern client's ResourceListChangedHandler to run")
	time.Sleep(500 * time.Millisecond) // room for a duplicate to show
	if n := changed.Load(); n != 1 {
		t.Errorf("the bridged modern client's ResourceListChangedHandler ran %d times after one change, want 1", n)
	}
}
