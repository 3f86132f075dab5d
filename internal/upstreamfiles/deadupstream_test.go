package upstreamfiles_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/childproc"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// lfSkill is what the upstream serves for skill://notes/SKILL.md: the
// plugin's crlfSkill normalised to LF, so its digest differs from the
// plugin folder's.
var lfSkill = strings.ReplaceAll(crlfSkill, "\r\n", "\n")

// deadAddr returns a loopback address nothing listens on: a port that was
// just bound and closed.
func deadAddr(t *testing.T) string {
	t.Helper()
	addr, err := childproc.FreeAddr() // below the ephemeral range: nothing takes it before the upstream comes back
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startNotesUpstream starts a go-sdk upstream on addr that serves
// skill://notes/SKILL.md itself (as lfSkill) and a tool echo, and stops it
// at the end of the test.
func startNotesUpstream(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s again: %v", addr, err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: notesURI, Name: "notes"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: lfSkill}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	srv := httptest.NewUnstartedServer(testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
}

// steppedClock is a clock a test moves forward by hand.
type steppedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *steppedClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *steppedClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// deadUpstreamSidecar is the assembled sidecar (overlay on for an hour,
// tools from the upstream) in front of addr, with the gate on or off, and
// a plugin with the skill notes, an agent with a tool and one without.
func deadUpstreamSidecar(t *testing.T, addr string, gated bool, clock *steppedClock) string {
	t.Helper()
	root := t.TempDir()
	sidecartest.WriteTree(t, root, map[string]string{
		"skills/notes/SKILL.md":  crlfSkill,
		"skills/notes/local.txt": "only on disk\n",
		"agents/tooled.md":       "---\nname: tooled\ndescription: Uses echo.\ntools: [echo]\n---\nEcho things.\n",
		"agents/plain.md":        "---\nname: plain\ndescription: No tools.\n---\nThink.\n",
	})
	side := sidecartest.Start(t, "http://"+addr+"/mcp", sidecartest.Options{Config: func(c *config.Config) {
		c.PluginDir, c.UpstreamFiles, c.UpstreamFilesTTL, c.AuthGate = root, "auto", time.Hour, "none"
		if gated {
			c.AuthGate = "upstream"
		}
	}})
	upstreamfiles.SetOverlayClock(side.Overlay, clock.now)
	return side.URL
}

// rawModern posts one 2026-07-28 request and returns the HTTP status and the
// JSON-RPC reply.
func rawModern(t *testing.T, u, method string, params map[string]any) (int, struct {
	Result json.RawMessage       `json:"result"`
	Error  *sidecartest.RPCError `json:"error"`
}) {
	t.Helper()
	params["_meta"] = map[string]any{sidecartest.MetaVersionKey: sidecartest.ModernVersion, sidecartest.MetaCapsKey: map[string]any{}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	h := sidecartest.Header("MCP-Protocol-Version", sidecartest.ModernVersion, "Mcp-Method", method)
	if uri, ok := params["uri"].(string); ok && method == "resources/read" {
		h.Set("Mcp-Name", uri)
	}
	resp, b := sidecartest.Post(t, u, string(body), h)
	b = messageOf(resp.Header, b)
	var m struct {
		Result json.RawMessage       `json:"result"`
		Error  *sidecartest.RPCError `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: HTTP %d, reply %q: %v", method, resp.StatusCode, b, err)
	}
	return resp.StatusCode, m
}

// TestCatalogOutlivesUpstream: with no gate (--auth-gate none) and the
// upstream's port closed, skills/list, skills/get, agents/list, agents/get
// of an agent without tools, resources/directory/read and reads of the
// plugin's files all answer, publishing and serving the plugin folder's
// bytes for the file the upstream would serve; agents/get of an agent with
// tools fails with upstream_unreachable. Once the upstream listens again,
// the listing learns the upstream's digest and the read is the upstream's.
func TestCatalogOutlivesUpstream(t *testing.T) {
	t.Parallel()
	addr := deadAddr(t)
	clock := &steppedClock{t: time.Unix(1_700_000_000, 0)}
	side := deadUpstreamSidecar(t, addr, false, clock)

	ok := func(method string, params map[string]any) json.RawMessage {
		t.Helper()
		st, m := rawModern(t, side, method, params)
		if st != http.StatusOK || m.Error != nil {
			t.Fatalf("%s with the upstream down: HTTP %d, error %+v; want a result", method, st, m.Error)
		}
		return m.Result
	}
	digestIn := func(raw json.RawMessage, key string) string {
		t.Helper()
		var m map[string]json.RawMessage
		var e entry
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(m[key], &e); err != nil {
			t.Fatal(err)
		}
		return publishedDigest(t, e, notesURI)
	}
	var list struct {
		Skills []entry `json:"skills"`
	}
	if err := json.Unmarshal(ok("skills/list", map[string]any{}), &list); err != nil || len(list.Skills) != 1 {
		t.Fatalf("skills/list: %v, %d skills", err, len(list.Skills))
	}
	if got, want := publishedDigest(t, list.Skills[0], notesURI), digestOf(crlfSkill); got != want {
		t.Errorf("skills/list digest of SKILL.md with the upstream down = %s, want the plugin folder's %s", got, want)
	}
	if got, want := digestIn(ok("skills/get", map[string]any{"uri": notesURI}), "skill"), digestOf(crlfSkill); got != want {
		t.Errorf("skills/get digest with the upstream down = %s, want the plugin folder's %s", got, want)
	}
	ok("agents/list", map[string]any{})
	ok("agents/get", map[string]any{"name": "plain"})
	ok("resources/directory/read", map[string]any{"uri": "skill://notes"})
	var rd struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(ok("resources/read", map[string]any{"uri": notesURI}), &rd); err != nil || len(rd.Contents) != 1 || rd.Contents[0].Text != crlfSkill {
		t.Errorf("resources/read SKILL.md with the upstream down = %+v (%v), want the plugin folder's bytes", rd, err)
	}
	ok("resources/read", map[string]any{"uri": "skill://notes/local.txt"})

	st, m := rawModern(t, side, "agents/get", map[string]any{"name": "tooled"})
	if st != http.StatusBadGateway || m.Error == nil || m.Error.Reason() != "upstream_unreachable" {
		t.Errorf("agents/get tooled with the upstream down: HTTP %d, error %+v; want 502 with data.reason upstream_unreachable", st, m.Error)
	}

	// The upstream comes back on the same port. Within the back-off the
	// overlay does not ask it yet; past it, the next listing learns its
	// digest, and the read goes to it.
	startNotesUpstream(t, addr)
	clock.step(2 * time.Second)
	if err := json.Unmarshal(ok("skills/list", map[string]any{}), &list); err != nil || len(list.Skills) != 1 {
		t.Fatalf("skills/list: %v", err)
	}
	if got, want := publishedDigest(t, list.Skills[0], notesURI), digestOf(lfSkill); got != want {
		t.Errorf("skills/list digest of SKILL.md with the upstream back = %s, want the upstream's %s", got, want)
	}
	if err := json.Unmarshal(ok("resources/read", map[string]any{"uri": notesURI}), &rd); err != nil || len(rd.Contents) != 1 || rd.Contents[0].Text != lfSkill {
		t.Errorf("resources/read SKILL.md with the upstream back = %+v (%v), want the upstream's bytes", rd, err)
	}
	ok("agents/get", map[string]any{"name": "tooled"})
}

// TestGatedDeadUpstreamFailsClosed: with the gate on (--auth-gate upstream)
// and the upstream's port closed, the sidecar's own methods answer 502 with
// data.reason upstream_unreachable: no caller can be admitted.
func TestGatedDeadUpstreamFailsClosed(t *testing.T) {
	t.Parallel()
	side := deadUpstreamSidecar(t, deadAddr(t), true, &steppedClock{t: time.Unix(1_700_000_000, 0)})
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"skills/list", map[string]any{}},
		{"skills/get", map[string]any{"uri": notesURI}},
		{"agents/list", map[string]any{}},
		{"agents/get", map[string]any{"name": "plain"}},
		{"resources/directory/read", map[string]any{"uri": "skill://notes"}},
		{"resources/read", map[string]any{"uri": "skill://notes/local.txt"}},
	} {
		st, m := rawModern(t, side, c.method, c.params)
		if st != http.StatusBadGateway || m.Error == nil || m.Error.Reason() != "upstream_unreachable" {
			t.Errorf("%s gated, upstream down: HTTP %d, error %+v; want 502 with data.reason upstream_unreachable", c.method, st, m.Error)
		}
	}
}
