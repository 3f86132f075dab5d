package methods_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// compatPlugin has two skills of the same name under different paths (two
// prompts), and one with a file besides its SKILL.md (its link).
func compatPlugin() map[string]string {
	return map[string]string{
		"skills/a/refunds/SKILL.md":       skillMD("refunds", "Refunds for team a. <b>&</b>"),
		"skills/b/refunds/SKILL.md":       skillMD("refunds", "Refunds for team b."),
		"skills/docs/SKILL.md":            skillMD("docs", "Writing docs."),
		"skills/docs/examples/example.md": "# An example\n",
	}
}

// compatUpstream has tools and prompts of its own; one of each uses a name
// the sidecar derives (skill_read, skill_a__refunds), so the upstream's
// must win.
func compatUpstream(t *testing.T, ec eraCase, token string) *testupstream.Upstream {
	return testupstream.Start(t, testupstream.Config{Stateless: ec.stateless, Token: token,
		Tools:   []*mcp.Tool{alphaTool(), {Name: "skill_read", InputSchema: &jsonschema.Schema{Type: "object"}}},
		Prompts: []*mcp.Prompt{{Name: "greet", Description: "Says hello."}, {Name: "skill_a__refunds", Description: "The upstream's own."}}})
}

func compatSidecar(t *testing.T, up *testupstream.Upstream, edit func(*config.Config)) string {
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, compatPlugin())
	w := newWatcher(t, dir)
	return newSidecar(t, up.URL, w.Snapshot, func(c *config.Config) {
		c.HostCompat = "prompts,tools"
		if edit != nil {
			edit(c)
		}
	})
}

// rawList returns a listing's entries by name, each as the bytes on the
// wire.
func rawList(t *testing.T, r sidecartest.Reply, key string) map[string]json.RawMessage {
	t.Helper()
	var res map[string]json.RawMessage
	r.OK(t, key+"/list", &res)
	var items []json.RawMessage
	if err := json.Unmarshal(res[key], &items); err != nil {
		t.Fatalf("%s/list: %s", key, r.Result)
	}
	out := map[string]json.RawMessage{}
	for _, it := range items {
		var n struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(it, &n)
		out[n.Name] = it
	}
	return out
}

func names(m map[string]json.RawMessage) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestHostCompatThroughSidecar: with host-compat prompts,tools, a go-sdk
// client in front of a token upstream with its own tools and prompts gets
// merged lists (the upstream's entries byte for byte, a colliding name
// left to the upstream), the prompts' and tools' text equal to what
// resources/read serves, and structured output that validates against the
// tool's outputSchema, in both eras; without the token it gets nothing.
func TestHostCompatThroughSidecar(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		up := compatUpstream(t, ec, "tok")
		side := compatSidecar(t, up, func(c *config.Config) { c.AuthGate = "upstream" })
		via := dialEra(t, ctx, ec, side, "tok")
		direct := dialEra(t, ctx, ec, up.URL, "tok")

		// Merged tools/list: the upstream's two byte for byte, then the
		// loading tool; the reading tool's name is the upstream's.
		tools := rawList(t, via.Call("tools/list", nil), "tools")
		upTools := rawList(t, direct.Call("tools/list", nil), "tools")
		if got, want := names(tools), []string{"alpha", "skill_load", "skill_read"}; !slices.Equal(got, want) {
			t.Fatalf("tools/list names = %v, want %v", got, want)
		}
		for n, raw := range upTools {
			if !bytes.Equal(tools[n], raw) {
				t.Errorf("tools/list entry %s = %s, want the upstream's %s", n, tools[n], raw)
			}
		}
		prompts := rawList(t, via.Call("prompts/list", nil), "prompts")
		upPrompts := rawList(t, direct.Call("prompts/list", nil), "prompts")
		if got, want := names(prompts), []string{"greet", "skill_a__refunds", "skill_b__refunds", "skill_docs"}; !slices.Equal(got, want) {
			t.Fatalf("prompts/list names = %v, want %v", got, want)
		}
		for n, raw := range upPrompts {
			if !bytes.Equal(prompts[n], raw) {
				t.Errorf("prompts/list entry %s = %s, want the upstream's %s", n, prompts[n], raw)
			}
		}
		// The go-sdk client sees the same lists.
		lt, err := via.CS.ListTools(ctx, nil)
		if err != nil || len(lt.Tools) != 3 {
			t.Fatalf("ListTools = %v, %v; want 3 tools", lt, err)
		}

		// The colliding names are the upstream's to answer.
		gp, err := via.CS.GetPrompt(ctx, &mcp.GetPromptParams{Name: "skill_a__refunds"})
		if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "upstream skill_a__refunds" {
			t.Errorf("GetPrompt(skill_a__refunds) = %+v, %v; want the upstream's", gp, err)
		}
		ct, err := via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "skill_read", Arguments: map[string]any{"uri": "skill://docs/SKILL.md"}})
		if err != nil || ct.IsError || ct.Content[0].(*mcp.TextContent).Text != "skill_read" {
			t.Errorf("CallTool(skill_read) = %+v, %v; want the upstream's echo", ct, err)
		}

		// prompts/get of the sidecar's: SKILL.md embedded as resources/read
		// serves it, byte for byte, and the other file as a link.
		read := via.Call("resources/read", map[string]any{"uri": "skill://docs/SKILL.md"})
		var rr struct {
			Contents []json.RawMessage `json:"contents"`
		}
		read.OK(t, "resources/read", &rr)
		pg := via.Call("prompts/get", map[string]any{"name": "skill_docs"})
		var got struct {
			Description string `json:"description"`
			Messages    []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		pg.OK(t, "prompts/get", &got)
		if len(got.Messages) != 2 || got.Description != "Writing docs." {
			t.Fatalf("prompts/get skill_docs = %s, want SKILL.md and one link", pg.Result)
		}
		want := `{"type":"resource","resource":` + string(rr.Contents[0]) + `}`
		if string(got.Messages[0].Content) != want {
			t.Errorf("prompts/get embedded = %s\nwant the bytes resources/read serves %s", got.Messages[0].Content, want)
		}
		if link := string(got.Messages[1].Content); !strings.Contains(link, `"type":"resource_link"`) || !strings.Contains(link, `"uri":"skill://docs/examples/example.md"`) {
			t.Errorf("prompts/get second message = %s, want a resource_link to the example", link)
		}
		sdkPrompt, err := via.CS.GetPrompt(ctx, &mcp.GetPromptParams{Name: "skill_b__refunds"})
		if err != nil {
			t.Fatalf("GetPrompt(skill_b__refunds) = %v", err)
		}
		res, err := via.CS.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://b/refunds/SKILL.md"})
		if err != nil {
			t.Fatal(err)
		}
		if er, ok := sdkPrompt.Messages[0].Content.(*mcp.EmbeddedResource); !ok || er.Resource.Text != res.Contents[0].Text {
			t.Errorf("GetPrompt(skill_b__refunds) = %+v, want SKILL.md's text %q", sdkPrompt.Messages[0].Content, res.Contents[0].Text)
		}

		// The loading tool: SKILL.md's text and the files, with structured
		// output valid against the tool's outputSchema.
		load, err := via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "skill_load", Arguments: map[string]any{"skill": "docs"}})
		if err != nil || load.IsError {
			t.Fatalf("CallTool(skill_load) = %+v, %v", load, err)
		}
		var docsRead struct {
			Contents []struct {
				Text string `json:"text"`
			} `json:"contents"`
		}
		read.OK(t, "resources/read", &docsRead)
		if txt := load.Content[0].(*mcp.TextContent).Text; txt != docsRead.Contents[0].Text {
			t.Errorf("skill_load text = %q, want %q", txt, docsRead.Contents[0].Text)
		}
		validate(t, lt, "skill_load", load.StructuredContent)
		sc := load.StructuredContent.(map[string]any)
		if sc["text"] != docsRead.Contents[0].Text || len(sc["files"].([]any)) != 1 {
			t.Errorf("skill_load structured = %v", sc)
		}
		// A tool failure is a result with isError, not a JSON-RPC error.
		bad, err := via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "skill_load", Arguments: map[string]any{"skill": "nope"}})
		if err != nil || !bad.IsError {
			t.Errorf("CallTool(skill_load, nope) = %+v, %v; want isError", bad, err)
		}

		// No token: the sidecar's prompts and tools are refused as
		// skills/* are.
		anon := *via
		anon.Token = ""
		for _, m := range []struct {
			method string
			params map[string]any
		}{
			{"prompts/get", map[string]any{"name": "skill_docs"}},
			{"tools/call", map[string]any{"name": "skill_load", "arguments": map[string]any{"skill": "docs"}}},
			{"skills/list", nil},
		} {
			if r := anon.Call(m.method, m.params); r.Status != http.StatusUnauthorized || r.Result != nil {
				t.Errorf("%s without the token = HTTP %d %s, want 401 and no result", m.method, r.Status, r.Body)
			}
		}
	})
}

// validate checks v against the outputSchema of tool name in lt.
func validate(t *testing.T, lt *mcp.ListToolsResult, name string, v any) {
	t.Helper()
	for _, tool := range lt.Tools {
		if tool.Name != name {
			continue
		}
		b, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s outputSchema %s: %v", name, b, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s outputSchema: %v", name, err)
		}
		if err := rs.Validate(jsonOf(t, v)); err != nil {
			t.Errorf("%s structured output %v does not validate: %v", name, v, err)
		}
		return
	}
	t.Fatalf("no tool %s in %v", name, lt.Tools)
}

// TestHostCompatReadTool: the reading tool returns a file's text as
// resources/read serves it, and fails as a result for an unknown URI; a
// prefix of the operator's choosing names both tools.
func TestHostCompatReadTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	up := compatUpstream(t, eras()[0], "")
	side := compatSidecar(t, up, func(c *config.Config) { c.HostCompatPrefix = "kb-" })
	via := dialEra(t, ctx, eras()[0], side, "")
	lt, err := via.CS.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, tool := range lt.Tools {
		ns = append(ns, tool.Name)
	}
	if want := []string{"alpha", "skill_read", "kb-load", "kb-read"}; !slices.Equal(ns, want) {
		t.Errorf("tools = %v, want %v", ns, want)
	}
	res, err := via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "kb-read", Arguments: map[string]any{"uri": "skill://docs/examples/example.md"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "# An example\n" {
		t.Fatalf("CallTool(kb-read) = %+v, %v", res, err)
	}
	validate(t, lt, "kb-read", res.StructuredContent)
	res, err = via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "kb-read", Arguments: map[string]any{"uri": "skill://docs/missing.md"}})
	if err != nil || !res.IsError {
		t.Errorf("CallTool(kb-read, missing) = %+v, %v; want isError", res, err)
	}
}

// TestHostCompatOff: with host-compat empty (the default), prompts/list,
// tools/list and calls of the names host-compat would add are the
// upstream's, byte for byte, and the capabilities are as before.
func TestHostCompatOff(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		up := compatUpstream(t, ec, "")
		dir := t.TempDir()
		sidecartest.WriteTree(t, dir, compatPlugin())
		side := newSidecar(t, up.URL, newWatcher(t, dir).Snapshot, nil)
		via := dialEra(t, ctx, ec, side, "")
		direct := dialEra(t, ctx, ec, up.URL, "")
		for _, m := range []struct {
			method string
			params map[string]any
		}{
			{"tools/list", nil}, {"prompts/list", nil},
			{"tools/call", map[string]any{"name": "skill_load", "arguments": map[string]any{"skill": "docs"}}},
			{"prompts/get", map[string]any{"name": "skill_docs"}},
		} {
			a, b := via.Call(m.method, m.params), direct.Call(m.method, m.params)
			if !bytes.Equal(a.Body, b.Body) {
				t.Errorf("%s through the sidecar = %s\nwant the upstream's %s", m.method, a.Body, b.Body)
			}
		}
		a, b := via.CS.InitializeResult().Capabilities, direct.CS.InitializeResult().Capabilities
		if !reflect.DeepEqual(a.Prompts, b.Prompts) || !reflect.DeepEqual(a.Tools, b.Tools) {
			t.Errorf("prompts, tools capabilities = %+v, %+v; want the upstream's %+v, %+v", a.Prompts, a.Tools, b.Prompts, b.Tools)
		}
	})
}

// TestHostCompatOldClient: a client before 2025-06-18 has no
// resource_link, so a prompt names the skill's other files in text.
func TestHostCompatOldClient(t *testing.T) {
	t.Parallel()
	up := compatUpstream(t, eraCase{stateless: true}, "")
	side := compatSidecar(t, up, nil)
	c := &sidecartest.Caller{T: t, Endpoint: side}
	for _, v := range []string{"2025-03-26", ""} {
		r := c.CallWith("prompts/get", map[string]any{"name": "skill_docs"}, func(h http.Header, _ map[string]any) {
			h.Del("MCP-Protocol-Version")
			if v != "" {
				h.Set("MCP-Protocol-Version", v)
			}
		})
		r.OK(t, "prompts/get "+v, nil)
		if s := string(r.Result); strings.Contains(s, "resource_link") || !strings.Contains(s, `"type":"text"`) || !strings.Contains(s, "skill://docs/examples/example.md") {
			t.Errorf("prompts/get at %q = %s, want the file named in text, no resource_link", v, s)
		}
	}
}

// TestHostCompatUpstreamFiles: when the upstream serves a SKILL.md itself,
// the prompt and the loading tool return the upstream's bytes, as
// resources/read through the sidecar does.
func TestHostCompatUpstreamFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	served := "---\r\nname: docs\r\ndescription: Writing docs.\r\n---\r\n# docs, as the upstream serves it\r\n"
	up := testupstream.Start(t, testupstream.Config{Files: map[string]string{"skill://docs/SKILL.md": served}})
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, compatPlugin())
	side := newSidecar(t, up.URL, newWatcher(t, dir).Snapshot, func(c *config.Config) {
		c.HostCompat, c.UpstreamFiles = "prompts,tools", "auto"
	})
	via := dialEra(t, ctx, eras()[0], side, "")
	read, err := via.CS.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://docs/SKILL.md"})
	if err != nil || read.Contents[0].Text != served {
		t.Fatalf("ReadResource = %+v, %v; want the upstream's bytes", read, err)
	}
	gp, err := via.CS.GetPrompt(ctx, &mcp.GetPromptParams{Name: "skill_docs"})
	if err != nil {
		t.Fatal(err)
	}
	if er, ok := gp.Messages[0].Content.(*mcp.EmbeddedResource); !ok || er.Resource.Text != served {
		t.Errorf("GetPrompt = %+v, want the upstream's bytes", gp.Messages[0].Content)
	}
	load, err := via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "skill_load", Arguments: map[string]any{"skill": "docs"}})
	if err != nil || load.IsError || load.Content[0].(*mcp.TextContent).Text != served {
		t.Errorf("CallTool(skill_load) = %+v, %v; want the upstream's bytes", load, err)
	}
}

// TestHostCompatListChanged: a reload that changes the skills sends
// prompts and tools list_changed to a go-sdk client, on a legacy GET
// stream and on a modern subscriptions/listen stream, and the handshake
// declares both with listChanged.
func TestHostCompatListChanged(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		up := compatUpstream(t, ec, "")
		dir := t.TempDir()
		sidecartest.WriteTree(t, dir, compatPlugin())
		side := sidecartest.Start(t, up.URL, sidecartest.Options{Config: func(c *config.Config) {
			c.AuthGate, c.UpstreamFiles, c.PluginDir, c.HostCompat = "none", "off", dir, "prompts,tools"
		}})
		prompts, tools := make(chan struct{}, 64), make(chan struct{}, 64)
		c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
			PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { prompts <- struct{}{} },
			ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { tools <- struct{}{} },
		})
		hc := &http.Client{Timeout: 20 * time.Second}
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: side.URL, MaxRetries: 1, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: ec.version})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		caps := cs.InitializeResult().Capabilities
		if caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Tools == nil || !caps.Tools.ListChanged {
			t.Fatalf("capabilities = prompts %+v, tools %+v; want both with listChanged", caps.Prompts, caps.Tools)
		}
		// The client's stream opens on its own time: a change made before
		// it is missed, so changes are made until one arrives (bounded).
		for i := range 50 {
			sidecartest.WriteTree(t, dir, map[string]string{"skills/new/SKILL.md": skillMD("new", fmt.Sprintf("Change %d.", i))})
			select {
			case <-prompts:
				select {
				case <-tools:
					return
				case <-ctx.Done():
					t.Fatal("prompts list_changed but no tools list_changed")
				}
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		t.Fatal("no prompts and tools list_changed after 50 changes")
	})
}

// TestHostCompatModernCache: on 2026-07-28 a merged listing takes the
// lower ttlMs of the two sides, and private when either side is.
func TestHostCompatModernCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ec := eras()[1]
	up := testupstream.Start(t, testupstream.Config{Stateless: true, TTLMs: 60000, Tools: []*mcp.Tool{alphaTool()}, Prompts: []*mcp.Prompt{{Name: "greet"}}})
	for _, tt := range []struct {
		ttl   int64
		scope string
		want  string
	}{
		{0, "private", `"ttlMs":0,"cacheScope":"private"`},
		{5000, "public", `"ttlMs":5000,"cacheScope":"public"`},
		{90000, "public", `"ttlMs":60000,"cacheScope":"public"`},
	} {
		side := compatSidecar(t, up, func(c *config.Config) { c.CacheTTLMs, c.CacheScope = tt.ttl, tt.scope })
		via := dialEra(t, ctx, ec, side, "")
		direct := dialEra(t, ctx, ec, up.URL, "")
		for _, m := range []string{"tools/list", "prompts/list"} {
			var got, theirs struct {
				TTL   *int64 `json:"ttlMs"`
				Scope string `json:"cacheScope"`
			}
			via.Call(m, nil).OK(t, m, &got)
			direct.Call(m, nil).OK(t, m, &theirs)
			if theirs.TTL == nil || *theirs.TTL != 60000 || theirs.Scope != "public" {
				t.Fatalf("the upstream's %s cache fields = %v %q, the test assumes 60000 and public", m, theirs.TTL, theirs.Scope)
			}
			if g := fmt.Sprintf(`"ttlMs":%d,"cacheScope":%q`, *got.TTL, got.Scope); g != tt.want {
				t.Errorf("sidecar ttl %d %s: %s = %s, want %s", tt.ttl, tt.scope, m, g, tt.want)
			}
		}
	}
}

// TestHostCompatBareUpstream: an upstream with no tools or prompts at all
// (whose tools/list and prompts/list are -32601) gets both capabilities
// declared, and the sidecar's entries are the whole listings, which
// answer.
func TestHostCompatBareUpstream(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless, NotFound: []string{"tools/list", "prompts/list"}})
		side := compatSidecar(t, up, nil)
		via := dialEra(t, ctx, ec, side, "")
		caps := via.CS.InitializeResult().Capabilities
		if caps.Tools == nil || caps.Prompts == nil {
			t.Fatalf("capabilities = %+v, want tools and prompts declared", caps)
		}
		lt, err := via.CS.ListTools(ctx, nil)
		if err != nil || len(lt.Tools) != 2 {
			t.Fatalf("ListTools = %+v, %v; want the sidecar's two", lt, err)
		}
		lp, err := via.CS.ListPrompts(ctx, nil)
		if err != nil || len(lp.Prompts) != 3 {
			t.Fatalf("ListPrompts = %+v, %v; want the sidecar's three", lp, err)
		}
		res, err := via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "skill_load", Arguments: map[string]any{"skill": "b/refunds"}})
		if err != nil || res.IsError {
			t.Fatalf("CallTool(skill_load) = %+v, %v", res, err)
		}
		if _, err := via.CS.GetPrompt(ctx, &mcp.GetPromptParams{Name: "skill_docs"}); err != nil {
			t.Errorf("GetPrompt(skill_docs) = %v", err)
		}
	})
}

// TestHostCompatAgents: an agent with instructions is a prompt whose one
// message is those instructions, as agents/get gives them; one without
// has none; and an agent's tools resolve against the upstream's own
// tools/list only, the sidecar's tools not among them.
func TestHostCompatAgents(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		up := compatUpstream(t, ec, "")
		dir := t.TempDir()
		files := compatPlugin()
		files["agents/helper.md"] = "---\nname: helper\ndescription: Helps.\ntools: [alpha, skill_load]\n---\nHelp <well> & \"quickly\".\n"
		files["agents/quiet.md"] = "---\nname: quiet\ndescription: Says nothing.\n---\n"
		sidecartest.WriteTree(t, dir, files)
		side := newSidecar(t, up.URL, newWatcher(t, dir).Snapshot, func(c *config.Config) { c.HostCompat = "prompts,tools" })
		via := dialEra(t, ctx, ec, side, "")
		e := via.Call("agents/get", map[string]any{"name": "helper"}).Failed(t, "agents/get helper", http.StatusOK, -32603)
		if !strings.Contains(string(e.Data), "skill_load") || strings.Contains(string(e.Data), "alpha") {
			t.Errorf("agents/get helper error data = %s, want skill_load (and only it) missing", e.Data)
		}
		prompts := rawList(t, via.Call("prompts/list", nil), "prompts")
		if _, ok := prompts["skill_agent__quiet"]; ok {
			t.Errorf("prompts/list has a prompt for an agent without instructions")
		}
		var entry struct{ Title, Description string }
		if err := json.Unmarshal(prompts["skill_agent__helper"], &entry); err != nil || entry.Title != "helper" || entry.Description != "Helps." {
			t.Fatalf("prompts/list entry skill_agent__helper = %s", prompts["skill_agent__helper"])
		}
		gp, err := via.CS.GetPrompt(ctx, &mcp.GetPromptParams{Name: "skill_agent__helper"})
		if err != nil || len(gp.Messages) != 1 {
			t.Fatalf("GetPrompt(skill_agent__helper) = %+v, %v", gp, err)
		}
		if txt, ok := gp.Messages[0].Content.(*mcp.TextContent); !ok || txt.Text != "Help <well> & \"quickly\"." {
			t.Errorf("GetPrompt(skill_agent__helper) message = %+v, want the agent's instructions", gp.Messages[0].Content)
		}
	})
}

// TestHostCompatPaging: the sidecar's prompts follow the upstream's last
// page on pages of their own, and a name the upstream used on an earlier
// page still wins: every prompt is listed once. Its two tools stay on one
// page whatever the page size.
func TestHostCompatPaging(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless, PageSize: 1,
			Prompts: []*mcp.Prompt{{Name: "skill_a__refunds"}, {Name: "zeta"}}})
		side := compatSidecar(t, up, func(c *config.Config) { c.PageSize = 1 })
		via := dialEra(t, ctx, ec, side, "")
		var got []string
		for p, err := range via.CS.Prompts(ctx, nil) {
			if err != nil {
				t.Fatalf("Prompts: %v (so far %v)", err, got)
			}
			got = append(got, p.Name+":"+p.Description)
		}
		want := []string{"skill_a__refunds:", "zeta:", "skill_b__refunds:Refunds for team b.", "skill_docs:Writing docs."}
		if !slices.Equal(got, want) {
			t.Errorf("prompts = %v, want %v", got, want)
		}
		// The two tools are never split across pages.
		var tools []string
		for tool, err := range via.CS.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("Tools: %v (so far %v)", err, tools)
			}
			tools = append(tools, tool.Name)
		}
		if want := []string{"skill_load", "skill_read"}; !slices.Equal(tools, want) {
			t.Errorf("tools = %v, want %v", tools, want)
		}
	})
}

// TestHostCompatModernOnlyUpstream: a legacy client of a modern-only
// upstream (served by the era bridge's legacy front) gets the merged lists
// and the sidecar's answers too, and the prompts capability the upstream
// lacks.
func TestHostCompatModernOnlyUpstream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mux := http.NewServeMux()
	mux.Handle("/mcp", modernonly.Handler(modernonly.NewServer()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, compatPlugin())
	s := sidecartest.Start(t, srv.URL+"/mcp", sidecartest.Options{Snapshot: newWatcher(t, dir).Snapshot, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.HostCompat = "none", "off", "prompts,tools"
	}})
	s.WaitEras(t)
	via := dialEra(t, ctx, eras()[0], s.URL, "")
	if caps := via.CS.InitializeResult().Capabilities; caps.Prompts == nil || !caps.Prompts.ListChanged {
		t.Errorf("prompts capability = %+v, want it declared with listChanged", caps.Prompts)
	}
	lt, err := via.CS.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"add", "echo", "skill_load", "skill_read"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	res, err := via.CS.CallTool(ctx, &mcp.CallToolParams{Name: "skill_load", Arguments: map[string]any{"skill": "docs"}})
	if err != nil || res.IsError {
		t.Fatalf("CallTool(skill_load) = %+v, %v", res, err)
	}
	validate(t, lt, "skill_load", res.StructuredContent)
	if _, err := via.CS.GetPrompt(ctx, &mcp.GetPromptParams{Name: "skill_docs"}); err != nil {
		t.Errorf("GetPrompt(skill_docs) = %v", err)
	}
}
