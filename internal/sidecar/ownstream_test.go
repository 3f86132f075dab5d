package sidecar_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestOwnStreamOnlyForTheSessionsCaller: when the upstream answers a
// standalone GET with 405 (it offers no stream; it need not look at the
// session first), the sidecar serves the session its own stream of
// notifications. That stream must go only to a caller the upstream admits
// in that session: go-sdk binds a session to the user who opened it and
// refuses it to any other (403), as the MCP security best practices ask.
// Before, bob, another user, got alice's session's stream just by naming
// its id: her resources/updated, and one of her eight stream places.
func TestOwnStreamOnlyForTheSessionsCaller(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := filepath.Join(t.TempDir(), "plugin")
	sidecartest.WriteTree(t, root, map[string]string{
		"skills/notes/SKILL.md": "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n",
		"agents/triage.md":      "---\nname: triage\ndescription: Sorts.\n---\nSort.\n",
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	inner := testupstream.Handler(s, nil)
	noGET := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no GET stream here", http.StatusMethodNotAllowed)
			return
		}
		inner.ServeHTTP(w, r)
	})
	up := testupstream.ServeHandler(t, auth.RequireBearerToken(aliceOrBob, nil)(noGET))
	endpoint := startFolder(t, up.URL+"/mcp", root, func(c *config.Config) { c.AuthGate = "upstream" })

	status, hdr, body := sidecartest.Call(t, endpoint, sidecartest.Initialize, map[string]string{"Authorization": "Bearer alice-token"})
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize = HTTP %d %q, session %q", status, body, sid)
	}
	get := func(token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode
	}
	if got := get("bob-token"); got == http.StatusOK {
		t.Errorf("bob's GET with alice's session id = HTTP 200: the sidecar's stream of alice's session, want a refusal")
	}
	if got := get("alice-token"); got != http.StatusOK {
		t.Errorf("alice's GET = HTTP %d, want the sidecar's own stream", got)
	}
}

// aliceOrBob verifies the bearer tokens of two users of a go-sdk upstream
// that binds each session to the user who opened it.
func aliceOrBob(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	id, ok := map[string]string{"alice-token": "alice", "bob-token": "bob"}[tok]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: id, Expiration: time.Now().Add(time.Hour)}, nil
}
