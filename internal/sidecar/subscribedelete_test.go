package sidecar_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestRefusedDeleteKeepsSubscriptions: a DELETE the upstream refuses does
// not end the session, so it must not end the session's subscriptions to
// the sidecar's skill files either. go-sdk binds a session to the user who
// opened it and answers another user's DELETE of it 403 ("session user
// mismatch"), as the MCP security best practices ask; another user who
// learned the id must not be able to silence the session's
// notifications/resources/updated through the sidecar.
func TestRefusedDeleteKeepsSubscriptions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := filepath.Join(t.TempDir(), "plugin")
	const ref = "skill://notes/ref.md"
	v1 := map[string]string{
		"skills/notes/SKILL.md": "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n",
		"skills/notes/ref.md":   "ref one\n",
		"agents/triage.md":      "---\nname: triage\ndescription: Sorts.\n---\nSort.\n",
	}
	swap := kubeletPlugin(t, root, v1)
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	up := testupstream.ServeHandler(t, auth.RequireBearerToken(aliceOrBob, nil)(testupstream.Handler(s, nil)))
	endpoint := startFolder(t, up.URL+"/mcp", root, func(c *config.Config) {
		c.AuthGate = "upstream"
		c.PollInterval = 200 * time.Millisecond
	})

	alice := map[string]string{"Authorization": "Bearer alice-token"}
	status, hdr, body := sidecartest.Call(t, endpoint, sidecartest.Initialize, alice)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize = HTTP %d %q, session %q", status, body, sid)
	}
	alice["Mcp-Session-Id"], alice["MCP-Protocol-Version"] = sid, "2025-11-25"
	if status, _, body := sidecartest.Call(t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, alice); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized = HTTP %d %q", status, body)
	}
	if status, _, body := sidecartest.Call(t, endpoint, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"`+ref+`"}}`, alice); status != http.StatusOK || !isEmptyResult(body) {
		t.Fatalf("resources/subscribe = HTTP %d %s, want the empty result", status, body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range alice {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	events := eventsOf(t, req, "alice's GET stream")

	// Bob, with alice's session id: the upstream refuses his DELETE.
	del, err := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("Authorization", "Bearer bob-token")
	del.Header.Set("Mcp-Session-Id", sid)
	del.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob's DELETE of alice's session = HTTP %d, want the upstream's 403", resp.StatusCode)
	}

	swap(withFile(v1, "skills/notes/ref.md", "ref two\n"))
	if got := updatedURIsOnce(t, events, 500*time.Millisecond); !slices.Equal(got, []string{ref}) {
		t.Errorf("alice got updated %q, want [%s] once", got, ref)
	}
}

// isEmptyResult reports whether body is the empty result for id 2.
func isEmptyResult(body string) bool {
	return strings.TrimSpace(body) == `{"jsonrpc":"2.0","id":2,"result":{}}`
}
