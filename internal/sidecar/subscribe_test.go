package sidecar_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// updatedURIs reads events for d and returns params.uri of every
// notifications/resources/updated among them.
func updatedURIs(t *testing.T, events <-chan sseEvent, d time.Duration) []string {
	t.Helper()
	var got []string
	eachEvent(t, events, d, "GET", func(ev sseEvent) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				URI string `json:"uri"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
			t.Fatalf("an event is not one JSON message: %q", ev.data)
		}
		if m.Method == "notifications/resources/updated" {
			if ev.hasID {
				t.Fatalf("a sidecar notification has an id: %+v", ev)
			}
			got = append(got, m.Params.URI)
		}
	})
	return got
}

// updatedURIsOnce collects the updated URIs on events until one has come
// (a minute at most, a hang guard: a loaded machine may take seconds to
// see a swap), then for room more, where a duplicate would show.
func updatedURIsOnce(t *testing.T, events <-chan sseEvent, room time.Duration) []string {
	t.Helper()
	var got []string
	for end := time.Now().Add(time.Minute); len(got) == 0; {
		if time.Now().After(end) {
			t.Fatal("no notifications/resources/updated in a minute")
		}
		got = updatedURIs(t, events, 50*time.Millisecond)
	}
	return append(got, updatedURIs(t, events, room)...)
}

// TestSubscribedSkillFileUpdates: resources/subscribe of a skill file the
// sidecar serves is answered by the sidecar (an empty result, 2025-11-25
// basic/resources), and a change of that file sends exactly one
// notifications/resources/updated with its URI to the subscribed session,
// none for another file, none to another session.
func TestSubscribedSkillFileUpdates(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := filepath.Join(t.TempDir(), "plugin")
	const (
		ref    = "skill://notes/ref.md"
		review = "skill://review/SKILL.md"
	)
	v1 := map[string]string{
		"skills/notes/SKILL.md":  "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n",
		"skills/notes/ref.md":    "ref one\n",
		"skills/review/SKILL.md": "---\nname: review\ndescription: Review.\n---\n# Review\n",
		"agents/triage.md":       "---\nname: triage\ndescription: Sorts.\n---\nSort.\n",
	}
	swap := kubeletPlugin(t, root, v1)
	endpoint := startFolder(t, churnUpstream(t, false), root, polled)

	// Session A: a go-sdk client subscribed to ref.md.
	var mu sync.Mutex
	var aGot []string
	aUpdated := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(aGot) }
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			aGot = append(aGot, r.Params.URI)
			mu.Unlock()
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: ref}); err != nil {
		t.Fatalf("subscribe %s: %v", ref, err)
	}

	// Session B: raw, subscribed to review/SKILL.md, holding its GET stream.
	sidB := legacySession(t, endpoint)
	hB := map[string]string{"Mcp-Session-Id": sidB, "MCP-Protocol-Version": "2025-11-25"}
	status, _, body := sidecartest.Call(t, endpoint, `{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"`+review+`"}}`, hB)
	var reply struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &reply) != nil || reply.ID != 7 || strings.TrimSpace(string(reply.Result)) != "{}" {
		t.Fatalf("resources/subscribe = HTTP %d %s, want the empty result", status, body)
	}
	events := openGET(t, ctx, endpoint, sidB)
	if n := updatedURIs(t, events, 300*time.Millisecond); len(n) > 0 {
		t.Fatalf("updated before any change: %q", n)
	}

	// ref.md changes: A hears of it once; B, subscribed to another file, not.
	v2 := withFile(v1, "skills/notes/ref.md", "ref two\n")
	swap(v2)
	if got := updatedURIs(t, events, 2*time.Second); len(got) > 0 {
		t.Errorf("session B got updated %q for a file it did not subscribe to", got)
	}
	sidecartest.WaitFor(t, time.Minute, func() bool { return len(aUpdated()) > 0 }, "session A to hear of ref.md's change")
	if got := aUpdated(); !slices.Equal(got, []string{ref}) {
		t.Fatalf("session A got updated %q, want [%s] once", got, ref)
	}

	// review/SKILL.md and notes/SKILL.md change: B hears of its file once;
	// A, subscribed to neither, of nothing.
	v3 := withFile(withFile(v2, "skills/review/SKILL.md", "---\nname: review\ndescription: Review harder.\n---\n# Review\n"),
		"skills/notes/SKILL.md", "---\nname: notes\ndescription: Take more notes.\n---\n# Notes\n")
	swap(v3)
	if got := updatedURIsOnce(t, events, 2*time.Second); !slices.Equal(got, []string{review}) {
		t.Errorf("session B got updated %q, want [%s] once", got, review)
	}
	if got := aUpdated(); !slices.Equal(got, []string{ref}) {
		t.Errorf("session A got updated %q after a change of files it did not subscribe to", got)
	}

	// A unsubscribes: a change of ref.md sends it nothing more.
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: ref}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	swap(withFile(v3, "skills/notes/ref.md", "ref three\n"))
	time.Sleep(1500 * time.Millisecond)
	if got := aUpdated(); !slices.Equal(got, []string{ref}) {
		t.Errorf("session A got updated %q after unsubscribing", got)
	}
}

// withFile returns a copy of m with key set to value.
func withFile(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[key] = value
	return out
}
