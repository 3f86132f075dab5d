package sidecar_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// notesSkill is the SKILL.md the notify upstream serves itself.
const notesSkill = "skill://notes/SKILL.md"

// notifyUpstream is a go-sdk server that serves notesSkill itself with the
// text in skillText and accepts resource subscriptions, with sessions (the
// legacy wire) or without (the modern wire).
func notifyUpstream(t *testing.T, skillText *atomic.Value, stateless bool) (*mcp.Server, string) {
	t.Helper()
	noop := func(context.Context, *mcp.SubscribeRequest) error { return nil }
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   noop,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{URI: notesSkill, Name: "notes", MIMEType: "text/markdown"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: skillText.Load().(string)}}}, nil
		})
	// A tool whose result quotes both notifications as text: data, which
	// must change nothing the sidecar learned.
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "quote"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: quotedNotifications}}}, nil, nil
	})
	srv := testupstream.Serve(t, s, &mcp.StreamableHTTPOptions{Stateless: stateless})
	return s, srv.URL + "/mcp"
}

// quotedNotifications is the text of the quote tool: both notifications,
// as a tool's output may well contain them (a log, a transcript).
const quotedNotifications = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"` + notesSkill + `"}}` +
	"\n" + `{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`

// publishedNotesDigest sends skills/get for notesSkill in the era of cs
// (with its session on the legacy wire) and returns the digest published
// for it.
func publishedNotesDigest(t *testing.T, endpoint string, cs *mcp.ClientSession) string {
	t.Helper()
	params := map[string]any{"uri": notesSkill}
	hdr := map[string]string{"MCP-Protocol-Version": cs.InitializeResult().ProtocolVersion}
	if v := cs.InitializeResult().ProtocolVersion; v == modernVersion {
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": v, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
		hdr["Mcp-Method"] = "skills/get"
	} else {
		hdr["Mcp-Session-Id"] = cs.ID()
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "skills/get", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	status, _, reply := sidecartest.Call(t, endpoint, string(body), hdr)
	// An SSE reply carries the response as the data of one event.
	for _, line := range strings.Split(reply, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id":1`) {
			reply = d
		}
	}
	var m struct {
		Result struct {
			Skill struct {
				Resources []struct {
					URI    string `json:"uri"`
					Digest string `json:"digest"`
				} `json:"resources"`
			} `json:"skill"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(reply), &m); err != nil || status != http.StatusOK {
		t.Fatalf("skills/get = HTTP %d %s (%v)", status, reply, err)
	}
	for _, r := range m.Result.Skill.Resources {
		if r.URI == notesSkill {
			return r.Digest
		}
	}
	t.Fatalf("skills/get lists no %s: %s", notesSkill, reply)
	return ""
}

func sha256Digest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestResourceNotificationsRefreshDigests: when the upstream announces that
// a resource changed (notifications/resources/updated or list_changed) and
// the announcement passes through the sidecar to a client, the sidecar
// forgets what it learned about the upstream's skill files, so the next
// skills/get asks the upstream again and publishes the new digest. This is
// serve.go's wiring (proxy.Options.OnResourcesChanged to the overlay's
// Invalidate) together with the proxy's stream watcher, run as main runs
// them. A tools/call reply quoting both notifications as text before that
// changes nothing (only parsed notifications count). Each era
// carries the announcement its own way: the session's GET
// stream (legacy) or the SSE reply of subscriptions/listen (modern).
func TestResourceNotificationsRefreshDigests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		stateless bool   // the upstream's wire: stateless puts the client on the modern one
		notify    string // which notification the upstream sends
		version   string // what the client asks for: "" is go-sdk's default, 2026-07-28
	}{
		{name: "legacy/updated", stateless: false, notify: "updated", version: "2025-11-25"},
		{name: "legacy/list_changed", stateless: false, notify: "list_changed", version: "2025-11-25"},
		{name: "modern/updated", stateless: true, notify: "updated"},
		{name: "modern/list_changed", stateless: true, notify: "list_changed"},
		// The era bridge (auto, the default, in every case): a modern
		// client of a legacy upstream; the announcement comes on the GET
		// stream of the bridge's listen session.
		{name: "bridged/list_changed", stateless: false, notify: "list_changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			oldText := "---\nname: notes\ndescription: Take notes, as the upstream serves them.\n---\n# Notes\n"
			newText := oldText + "\nChanged upstream after it was listed.\n"
			var text atomic.Value
			text.Store(oldText)
			s, upstreamURL := notifyUpstream(t, &text, tt.stateless)
			root := filepath.Join(t.TempDir(), "plugin")
			sidecartest.WriteTree(t, root, map[string]string{"skills/notes/SKILL.md": "---\nname: notes\ndescription: Take notes.\n---\n# Notes (on disk)\n"})
			// The TTL outlasts the test: only the notification can refresh.
			endpoint := startFolder(t, upstreamURL, root, func(c *config.Config) { c.UpstreamFilesTTL = time.Hour })

			if !tt.stateless && tt.version == "" {
				// Bridged only once the sidecar learned the upstream's eras.
				sidecartest.WaitFor(t, time.Minute, func() bool {
					_, _, b := sidecartest.Call(t, endpoint, modernDiscover, modernHeaders("server/discover"))
					return strings.Contains(b, `"2026-07-28"`)
				}, "the sidecar to bridge server/discover")
			}
			got := make(chan string, 64)
			report := func(what string) {
				select {
				case got <- what:
				default:
				}
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
				ResourceUpdatedHandler:     func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { report("updated") },
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { report("list_changed") },
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1},
				&mcp.ClientSessionOptions{ProtocolVersion: tt.version})
			if err != nil {
				t.Fatalf("connect through the sidecar: %v", err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			if modern := cs.InitializeResult().ProtocolVersion == modernVersion; modern != (tt.version == "") {
				t.Fatalf("negotiated %s, want the modern wire: %v", cs.InitializeResult().ProtocolVersion, !modern)
			}
			if tt.notify == "updated" {
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: notesSkill}); err != nil {
					t.Fatalf("subscribe to %s: %v", notesSkill, err)
				}
			}

			if d := publishedNotesDigest(t, endpoint, cs); d != sha256Digest(oldText) {
				t.Fatalf("first skills/get publishes %s, want the upstream's %s", d, sha256Digest(oldText))
			}
			text.Store(newText)
			// A reply that carries the notifications' text as data (a
			// tools/call result, on an SSE reply) is no notification.
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "quote", Arguments: map[string]any{}})
			if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != quotedNotifications {
				t.Fatalf("tools/call quote through the sidecar: %v, %v", res, err)
			}
			if d := publishedNotesDigest(t, endpoint, cs); d != sha256Digest(oldText) {
				t.Fatalf("after a reply quoting the notifications (and before any notification) skills/get publishes %s, want the cached %s", d, sha256Digest(oldText))
			}

			// Announce until the client has the announcement: a subscription
			// or stream may not be in place at the upstream for the first.
			for delivered := false; !delivered; {
				switch tt.notify {
				case "updated":
					if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: notesSkill}); err != nil {
						t.Fatal(err)
					}
				case "list_changed":
					s.AddResource(&mcp.Resource{URI: "test://other", Name: "other"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
						return &mcp.ReadResourceResult{}, nil
					})
				}
				select {
				case what := <-got:
					delivered = what == tt.notify
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
					t.Fatalf("the client never received notifications/resources/%s through the sidecar", tt.notify)
				}
			}
			// The sidecar saw the notification before relaying it, so it has
			// already forgotten the old digest.
			if d := publishedNotesDigest(t, endpoint, cs); d != sha256Digest(newText) {
				t.Errorf("after notifications/resources/%s skills/get publishes %s, want the upstream's new %s", tt.notify, d, sha256Digest(newText))
			}
		})
	}
}
