package sidecar_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// sseEvent is one event as the SSE spec's parser sees it (WHATWG HTML
// §9.2.6), read by sseEvents below: written from the spec, not from the
// sidecar's own reader.
type sseEvent struct {
	id    string
	hasID bool
	data  string
}

// startFolder starts the sidecar (sidecartest.Start) in front of upstream,
// serving the plugin folder root, with the configuration edit makes, and
// returns its MCP URL.
func startFolder(t *testing.T, upstream, root string, edit func(*config.Config)) string {
	t.Helper()
	return sidecartest.Start(t, upstream, sidecartest.Options{Config: func(c *config.Config) {
		c.PluginDir = root
		edit(c)
	}}).URL
}

// polled is the configuration of most tests here: no auth gate, and the
// plugin folder fingerprinted every 200 ms besides its file events.
func polled(c *config.Config) {
	c.AuthGate = "none"
	c.PollInterval = 200 * time.Millisecond
}

// sseEvents reads events from an SSE body ("\n" line ends, as go-sdk
// writes) and sends each one; it closes the channel when the body ends.
func sseEvents(body *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	var data []string
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if data != nil {
				ev.data = strings.Join(data, "\n")
				out <- ev
			}
			ev, data = sseEvent{}, nil
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			data = append(data, value)
		case "id":
			ev.id, ev.hasID = value, true
		}
	}
}

// kubeletPlugin lays a plugin folder out as the kubelet mounts a ConfigMap:
// the files in a timestamped directory, "..data" linking to it, and the
// top-level entries linking through "..data". swap publishes a new version
// the kubelet's way: a new directory, a new link renamed over "..data".
func kubeletPlugin(t *testing.T, root string, files map[string]string) (swap func(map[string]string)) {
	t.Helper()
	n := 0
	write := func(files map[string]string) string {
		n++
		dir := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", n, n)
		sidecartest.WriteTree(t, filepath.Join(root, dir), files)
		return dir
	}
	first := write(files)
	if err := os.Symlink(first, filepath.Join(root, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"skills", "agents"} {
		if err := os.Symlink(filepath.Join("..data", top), filepath.Join(root, top)); err != nil {
			t.Fatal(err)
		}
	}
	return func(files map[string]string) {
		dir := write(files)
		tmp := filepath.Join(root, "..data_tmp")
		if err := os.Symlink(dir, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(root, "..data")); err != nil {
			t.Fatal(err)
		}
	}
}

// churnUpstream is a legacy go-sdk upstream whose GET streams carry event
// ids (an event store) and its own notifications all the time: it adds a
// tool every few milliseconds, and each addition is announced with
// notifications/tools/list_changed. refuseGET makes it answer GET with 405.
func churnUpstream(t *testing.T, refuseGET bool) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	h := http.Handler(testupstream.Handler(s, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	if refuseGET {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				http.Error(w, "no GET stream here", http.StatusMethodNotAllowed)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	return serveChurning(t, s, h)
}

// serveChurning serves h (in front of s) until the test ends while a new
// tool is added to s every 15 ms, so the upstream's own list_changed
// notifications flow the whole time; it returns the MCP URL.
func serveChurning(t *testing.T, s *mcp.Server, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("t%d", i)}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			select {
			case <-ctx.Done():
			case <-time.After(15 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return srv.URL + "/mcp"
}

// legacySession opens a legacy session with raw requests and returns its id.
func legacySession(t *testing.T, endpoint string) string {
	t.Helper()
	status, hdr, body := sidecartest.Call(t, endpoint, sidecartest.Initialize, nil)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize = HTTP %d %q, session %q", status, body, sid)
	}
	h := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	if status, _, body := sidecartest.Call(t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized = HTTP %d %q", status, body)
	}
	return sid
}

// openGET opens session sid's standalone GET stream and returns its events.
func openGET(t *testing.T, ctx context.Context, endpoint, sid string) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	return eventsOf(t, req, "GET stream")
}

// eventsOf sends req, which must be answered 200 with an SSE stream (what
// names it in a failure), and returns the stream's events; the body is
// closed when the test ends.
func eventsOf(t *testing.T, req *http.Request, what string) <-chan sseEvent {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s = HTTP %d %s %s", what, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	out := make(chan sseEvent, 4096)
	go sseEvents(bufio.NewReader(resp.Body), out)
	return out
}

// sidecarNotices reads events for d and returns the sidecar's own
// notifications among them (every event whose method is one the sidecar
// sends), checking that every event is one whole JSON-RPC message, that
// the upstream's carry ids that only grow, and that the sidecar's carry none.
func sidecarNotices(t *testing.T, events <-chan sseEvent, d time.Duration, upstreamSeen *int) []string {
	t.Helper()
	var got []string
	eachEvent(t, events, d, "GET", func(ev sseEvent) {
		if !strings.HasPrefix(ev.data, `{"jsonrpc":"2.0"`) || !strings.HasSuffix(ev.data, "}") {
			t.Fatalf("an event is not one whole message: %q", ev.data)
		}
		switch {
		case strings.Contains(ev.data, `"notifications/tools/list_changed"`):
			if !ev.hasID || ev.id == "" {
				t.Fatalf("an upstream event lost its id: %+v", ev)
			}
			*upstreamSeen++
		case strings.Contains(ev.data, `"notifications/resources/list_changed"`), strings.Contains(ev.data, `"notifications/agents/list_changed"`):
			if ev.hasID {
				t.Fatalf("a sidecar notification has an id: %+v", ev)
			}
			got = append(got, ev.data)
		}
	})
	return got
}

// noticesUntil calls read for short spans until it has returned n
// notices in all, and returns them: a minute at most, a hang guard, for a
// loaded machine may take seconds to see a swap. A duplicate shows in the
// reads that follow.
func noticesUntil(t *testing.T, n int, read func(time.Duration) []string) []string {
	t.Helper()
	var got []string
	for end := time.Now().Add(time.Minute); len(got) < n; {
		if time.Now().After(end) {
			t.Fatalf("%d notices in a minute, want %d: %q", len(got), n, got)
		}
		got = append(got, read(50*time.Millisecond)...)
	}
	return got
}

// eachEvent hands f every event of a stream (named in the failure) that
// arrives within d, failing the test if the stream ends first.
func eachEvent(t *testing.T, events <-chan sseEvent, d time.Duration, stream string, f func(sseEvent)) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the %s stream ended", stream)
			}
			f(ev)
		case <-deadline:
			return
		}
	}
}

// notesPlugin returns the plugin the notification tests start with (the
// skill notes, the agent triage) and a real change of it: a skill added
// and the agent's description changed.
func notesPlugin() (v1, v2 map[string]string) {
	notes := "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n"
	return map[string]string{
			"skills/notes/SKILL.md": notes,
			"agents/triage.md":      "---\nname: triage\ndescription: Sorts.\n---\nSort.\n",
		}, map[string]string{
			"skills/notes/SKILL.md":  notes,
			"skills/review/SKILL.md": "---\nname: review\ndescription: Review changes.\n---\n# Review\n",
			"agents/triage.md":       "---\nname: triage\ndescription: Sorts faster.\n---\nSort.\n",
		}
}

const (
	wantResourcesChanged = `{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`
	wantAgentsChanged    = `{"jsonrpc":"2.0","method":"notifications/agents/list_changed"}`
)

func TestPluginChangeNotifiesLegacyStreams(t *testing.T) {
	t.Parallel()
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("upstream GET refused %v", refuse), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			root := filepath.Join(t.TempDir(), "plugin")
			v1, v2 := notesPlugin()
			swap := kubeletPlugin(t, root, v1)
			endpoint := startFolder(t, churnUpstream(t, refuse), root, polled)

			// A go-sdk client holds its own GET stream (session A) ...
			var aChanged atomic.Int32
			c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { aChanged.Add(1) },
			})
			// Pinned to the legacy era, this test's subject: with era-bridge
			// auto a default go-sdk client negotiates 2026-07-28 through the
			// bridge and listens instead (TestBridgedModernClientGetsChangeNotifications).
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			// ... and a raw reader holds session B's.
			events := openGET(t, ctx, endpoint, legacySession(t, endpoint))
			upstream := 0
			if !refuse {
				for upstream < 3 {
					if n := sidecarNotices(t, events, 50*time.Millisecond, &upstream); len(n) > 0 {
						t.Fatalf("notifications before any change: %q", n)
					}
				}
			}

			// A ..data swap to identical content: a successful reload that
			// changed nothing sends nothing.
			swap(v1)
			if n := sidecarNotices(t, events, 800*time.Millisecond, &upstream); len(n) > 0 {
				t.Fatalf("an unchanged reload sent %q", n)
			}
			// The root gone: a failed reload, which keeps the last good
			// catalog and sends nothing; back, with the same content:
			// nothing again.
			if err := os.Rename(root, root+".away"); err != nil {
				t.Fatal(err)
			}
			if n := sidecarNotices(t, events, 800*time.Millisecond, &upstream); len(n) > 0 {
				t.Fatalf("a failed reload sent %q", n)
			}
			if err := os.Rename(root+".away", root); err != nil {
				t.Fatal(err)
			}
			if n := sidecarNotices(t, events, 800*time.Millisecond, &upstream); len(n) > 0 {
				t.Fatalf("a reload after the failed one, with nothing changed, sent %q", n)
			}

			// A real change, skills and agents: each notification once,
			// between whole upstream events.
			before := upstream
			swap(v2)
			got := noticesUntil(t, 2, func(d time.Duration) []string { return sidecarNotices(t, events, d, &upstream) })
			if want := []string{wantResourcesChanged, wantAgentsChanged}; strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("after the change the stream carried %q, want %q once each", got, want)
			}
			// More time: no duplicate.
			if n := sidecarNotices(t, events, 500*time.Millisecond, &upstream); len(n) > 0 {
				t.Fatalf("a duplicate after the change: %q", n)
			}
			if !refuse && upstream == before {
				t.Error("no upstream event went by during the change: nothing shows the notifications came between them")
			}
			sidecartest.WaitFor(t, time.Minute, func() bool { return aChanged.Load() > 0 },
				"the go-sdk client's ResourceListChangedHandler to run")
			if n := aChanged.Load(); n != 1 {
				t.Errorf("the go-sdk client's ResourceListChangedHandler ran %d times, want 1", n)
			}
			// A re-list shows the change.
			status, _, body := sidecartest.Call(t, endpoint, `{"jsonrpc":"2.0","id":5,"method":"skills/list"}`,
				map[string]string{"Mcp-Session-Id": cs.ID(), "MCP-Protocol-Version": "2025-11-25"})
			if status != http.StatusOK || !strings.Contains(body, "skill://review/SKILL.md") {
				t.Errorf("skills/list after the notification = HTTP %d %s, want the new skill", status, body)
			}
		})
	}
}
