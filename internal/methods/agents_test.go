package methods_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// richTools are upstream tools with every field go-sdk can carry, so that
// "identical in every field" has fields to differ in.
func richTools() []*mcp.Tool {
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon", "mid", "zeta"}
	var out []*mcp.Tool
	for i, n := range names {
		ro := i%2 == 0
		out = append(out, &mcp.Tool{
			Name:        n,
			Title:       strings.ToUpper(n),
			Description: "Tool " + n + " does ünïcode & <html> things.",
			InputSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"q": map[string]any{"type": "string", "description": "query for " + n}},
				"required":   []any{"q"},
			},
			OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: ro, Title: "annotated " + n},
			Meta:         mcp.Meta{"com.example/rank": i},
		})
	}
	return out
}

// pluginAgents is a plugin with agents covering every agents/get case.
func pluginAgents() map[string]string {
	return map[string]string{
		"skills/pdf-processing/SKILL.md": skillMD("pdf-processing", "Fill PDF forms."),
		"agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews\n  PDFs.\ntools: [zeta, alpha, mid]\nmodel: sonnet\n" +
			"capabilities: [review, code]\nskills: [pdf-processing]\ncolor: blue\n---\n\nReview carefully.\n\nThen report.\n",
		"agents/analyst.md": "---\nname: analyst\ndescription: Analyses.\ntools: beta, gamma\nmodel: claude-haiku-4-5\nskills: pdf-processing\n---\nAnalyse.\n",
		"agents/builder.md": "---\nname: builder\ndescription: Builds.\ntools: [alpha, Read, Bash]\n---\nBuild.\n",
		"agents/crlf.md":    "---\r\nname: crlf-agent\r\ndescription: Written on Windows.\r\ntools: [delta]\r\n---\r\nLine one.\r\nLine two.\r\n\r\nLine four.\r\n",
		"agents/plain.md":   "---\nname: plain\ndescription: No tools, no body.\nmodel: inherit\n---\n\n   \n",
		"agents/cp1252.md":  "---\nname: windows\ndescription: \x93smart quotes\x94 from cp1252.\n---\nBody.\n",
	}
}

type agentCard struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Capabilities []string `json:"capabilities"`
}

type agentDetail struct {
	Agent            string            `json:"agent"`
	Instructions     *string           `json:"instructions"`
	ModelRoutingHint *json.RawMessage  `json:"modelRoutingHint"`
	Tools            []json.RawMessage `json:"tools"`
	Meta             map[string]struct {
		Frontmatter map[string]any    `json:"frontmatter"`
		Skills      map[string]string `json:"skills"`
	} `json:"_meta"`
}

// upstreamTools returns the upstream's own tools/list entries for this
// caller, every page followed, as the raw objects it sent.
func upstreamTools(t *testing.T, c *sidecartest.Caller) (map[string]json.RawMessage, int) {
	t.Helper()
	out := map[string]json.RawMessage{}
	params := map[string]any{}
	for pages := 1; pages < 50; pages++ {
		var pg struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		c.Call("tools/list", params).OK(t, "direct tools/list", &pg)
		for _, raw := range pg.Tools {
			var n struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatal(err)
			}
			out[n.Name] = raw
		}
		if pg.NextCursor == "" {
			return out, pages
		}
		params = map[string]any{"cursor": pg.NextCursor}
	}
	t.Fatalf("tools/list did not end")
	return nil, 0
}

func agentsSetup(t *testing.T, ctx context.Context, ec eraCase, edit func(*config.Config)) (side, direct *sidecartest.Caller, snap *catalog.Snapshot) {
	t.Helper()
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginAgents())
	w := newWatcher(t, dir)
	up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless, PageSize: 2, Tools: richTools()})
	return dialEra(t, ctx, ec, newSidecar(t, up.URL, w.Snapshot, edit), ""), dialEra(t, ctx, ec, up.URL, ""), w.Snapshot()
}

func TestAgentsList(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := agentsSetup(t, ctx, ec, func(c *config.Config) { c.PageSize = 2 })
		var got []agentCard
		params := map[string]any{}
		pages := 0
		for ; pages < 10; pages++ {
			var pg struct {
				Agents     []agentCard `json:"agents"`
				NextCursor string      `json:"nextCursor"`
			}
			c.Call("agents/list", params).OK(t, "agents/list", &pg)
			if len(pg.Agents) > 2 {
				t.Errorf("agents/list page of %d, page size 2", len(pg.Agents))
			}
			got = append(got, pg.Agents...)
			if pg.NextCursor == "" {
				break
			}
			params = map[string]any{"cursor": pg.NextCursor}
		}
		want := []agentCard{
			{Name: "analyst", Description: "Analyses.", Capabilities: []string{}},
			{Name: "builder", Description: "Builds.", Capabilities: []string{}},
			{Name: "crlf-agent", Description: "Written on Windows.", Capabilities: []string{}},
			{Name: "plain", Description: "No tools, no body.", Capabilities: []string{}},
			{Name: "reviewer", Description: "Reviews PDFs.", Capabilities: []string{"review", "code"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("agents/list cards (-want +got):\n%s", diff)
		}
		if pages != 2 {
			t.Errorf("agents/list took %d pages, want 3", pages+1)
		}
		for _, cursor := range []any{"nope", 7, "a1:***", "s1:cmV2aWV3ZXI"} {
			c.Call("agents/list", map[string]any{"cursor": cursor}).Failed(t, "agents/list cursor", http.StatusOK, -32602)
		}
	})
}

// TestAgentsGetTools: the tools of agents/get are the upstream's own
// tools/list entries for the same caller, byte for byte, in the agent
// file's order, although the upstream's tools/list spans four pages.
func TestAgentsGetTools(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, direct, _ := agentsSetup(t, ctx, ec, nil)
		byName, pages := upstreamTools(t, direct)
		if pages < 4 {
			t.Fatalf("upstream tools/list took %d pages, want at least 4", pages)
		}
		tests := []struct {
			agent string
			tools []string
		}{
			{"reviewer", []string{"zeta", "alpha", "mid"}},
			{"analyst", []string{"beta", "gamma"}},
			{"crlf-agent", []string{"delta"}},
			{"plain", nil},
		}
		for _, tt := range tests {
			var got agentDetail
			c.Call("agents/get", map[string]any{"name": tt.agent}).OK(t, "agents/get "+tt.agent, &got)
			if len(got.Tools) != len(tt.tools) {
				t.Fatalf("agents/get(%s) has %d tools, want %d", tt.agent, len(got.Tools), len(tt.tools))
			}
			for i, n := range tt.tools {
				if !bytes.Equal(got.Tools[i], byName[n]) {
					t.Errorf("agents/get(%s).tools[%d] = %s\nwant the upstream's own entry %s", tt.agent, i, got.Tools[i], byName[n])
				}
			}
			if got.Tools == nil {
				t.Errorf("agents/get(%s).tools is absent or null, want a list", tt.agent)
			}
		}
	})
}

func TestAgentsGetFields(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := agentsSetup(t, ctx, ec, nil)
		get := func(name string) agentDetail {
			var d agentDetail
			c.Call("agents/get", map[string]any{"name": name}).OK(t, "agents/get "+name, &d)
			return d
		}
		str := func(s string) *string { return &s }
		hint := func(s string) *json.RawMessage { r := json.RawMessage(s); return &r }

		rv := get("reviewer")
		// The draft's GetAgentResult.agent: the name, a string, not the card.
		if rv.Agent != "reviewer" {
			t.Errorf("reviewer agent = %q, want the name %q", rv.Agent, "reviewer")
		}
		if diff := cmp.Diff(str("Review carefully.\n\nThen report."), rv.Instructions); diff != "" {
			t.Errorf("reviewer instructions (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(hint(`{"role":"medium","vision":false}`), rv.ModelRoutingHint); diff != "" {
			t.Errorf("reviewer modelRoutingHint (-want +got):\n%s", diff)
		}
		m := rv.Meta[metaAgentKey]
		if diff := cmp.Diff(map[string]string{"pdf-processing": "skill://pdf-processing/SKILL.md"}, m.Skills); diff != "" {
			t.Errorf("reviewer _meta skills (-want +got):\n%s", diff)
		}
		if m.Frontmatter["color"] != "blue" || m.Frontmatter["model"] != "sonnet" {
			t.Errorf("reviewer _meta frontmatter = %v, want the fields as written", m.Frontmatter)
		}

		an := get("analyst")
		if diff := cmp.Diff(hint(`{"role":"small","vision":false}`), an.ModelRoutingHint); diff != "" {
			t.Errorf("analyst modelRoutingHint (-want +got):\n%s", diff)
		}

		// Blank body: no instructions; model inherit: no hint.
		pl := get("plain")
		if pl.Instructions != nil || pl.ModelRoutingHint != nil {
			t.Errorf("plain: instructions %v, modelRoutingHint %v; want both absent", pl.Instructions, pl.ModelRoutingHint)
		}
	})
}

func TestAgentsGetErrors(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := agentsSetup(t, ctx, ec, nil)
		reason := func(e *sidecartest.RPCError) (string, []string) {
			var d struct {
				Reason  string   `json:"reason"`
				Missing []string `json:"missing"`
			}
			if e != nil {
				_ = json.Unmarshal(e.Data, &d)
			}
			return d.Reason, d.Missing
		}
		e := c.Call("agents/get", map[string]any{"name": "builder"}).Failed(t, "agents/get builder", http.StatusOK, -32603)
		if r, missing := reason(e); r != "invalid_agent_definition" || !slices.Equal(missing, []string{"Read", "Bash"}) {
			t.Errorf("agents/get builder data = %s, want reason invalid_agent_definition and missing [Read Bash]", e.Data)
		}
		e = c.Call("agents/get", map[string]any{"name": "nobody"}).Failed(t, "agents/get nobody", http.StatusOK, -32602)
		if r, _ := reason(e); r != "agent_not_found" {
			t.Errorf("agents/get nobody data = %s, want reason agent_not_found", e.Data)
		}
		// The draft reference server's message; data.name says what was asked.
		var nd struct {
			Name string `json:"name"`
		}
		if e != nil {
			_ = json.Unmarshal(e.Data, &nd)
			if e.Message != "Agent not found" || nd.Name != "nobody" {
				t.Errorf("agents/get nobody error = %q, data %s; want message %q and data.name %q", e.Message, e.Data, "Agent not found", "nobody")
			}
		}
		// A name that is not a string (missing and empty names have their
		// own test).
		for _, params := range []map[string]any{{"name": 42}, {"name": nil}, {"name": []any{"reviewer"}}, {"name": map[string]any{}}} {
			c.Call("agents/get", params).Failed(t, "agents/get with params "+string(sidecartest.MustMarshal(t, params)), http.StatusOK, -32602)
		}
	})
}

// TestAgentsCP1252FileSkipped: an agent file saved in cp1252 (not UTF-8)
// is skipped with an encoding problem naming it, while every other agent
// file of the plugin loads; agents/get of its name is agent_not_found.
func TestAgentsCP1252FileSkipped(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, snap := agentsSetup(t, ctx, ec, nil)
		var skipped []string
		for _, p := range snap.Problems() {
			if p.Severity == catalog.SeveritySkip {
				skipped = append(skipped, p.Path+" ("+p.Kind+")")
			}
		}
		if want := []string{"agents/cp1252.md (" + catalog.KindEncoding + ")"}; !slices.Equal(skipped, want) {
			t.Errorf("skipped %v, want only %v: %+v", skipped, want, snap.Problems())
		}
		others := -1 // every agent file but cp1252.md
		for p := range pluginAgents() {
			if strings.HasPrefix(p, "agents/") {
				others++
			}
		}
		if n := len(snap.Agents()); n != others {
			t.Errorf("%d agents loaded, want the %d other agent files", n, others)
		}
		e := c.Call("agents/get", map[string]any{"name": "windows"}).Failed(t, "agents/get windows", http.StatusOK, -32602)
		if r := e.Reason(); r != "agent_not_found" {
			t.Errorf("agents/get windows data = %s, want reason agent_not_found", e.Data)
		}
	})
}

// TestAgentsGetWithoutName: agents/get with no name or an empty one is
// invalid params (-32602), not an internal error and not a lookup of an
// agent named "".
func TestAgentsGetWithoutName(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := agentsSetup(t, ctx, ec, nil)
		tests := []struct {
			name   string
			params map[string]any
		}{
			{name: "no name", params: map[string]any{}},
			{name: "empty name", params: map[string]any{"name": ""}},
		}
		for _, tt := range tests {
			e := c.Call("agents/get", tt.params).Failed(t, "agents/get with "+tt.name, http.StatusOK, -32602)
			if r := e.Reason(); r == "agent_not_found" {
				t.Errorf("agents/get with %s: data %s, want an invalid-params reason, not agent_not_found", tt.name, e.Data)
			}
		}
	})
}

// TestAgentsGetBareStringSkills: "skills: pdf-processing" written as a
// bare string instead of a list maps no skill: _meta carries an empty
// mapping (not null), and the frontmatter as written.
func TestAgentsGetBareStringSkills(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := agentsSetup(t, ctx, ec, nil)
		var an agentDetail
		c.Call("agents/get", map[string]any{"name": "analyst"}).OK(t, "agents/get analyst", &an)
		m := an.Meta[metaAgentKey]
		if m.Skills == nil || len(m.Skills) != 0 {
			t.Errorf("analyst (skills: pdf-processing, a bare string) _meta skills = %v, want an empty mapping", m.Skills)
		}
		if got := m.Frontmatter["skills"]; got != "pdf-processing" {
			t.Errorf("analyst _meta frontmatter skills = %v, want the bare string as written", got)
		}
	})
}

// TestAgentsGetCRLF: an agent file with CRLF line endings loads; its
// description carries no carriage return and its instructions are the body's
// lines joined by "\n".
func TestAgentsGetCRLF(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := agentsSetup(t, ctx, ec, nil)
		var cr agentDetail
		c.Call("agents/get", map[string]any{"name": "crlf-agent"}).OK(t, "agents/get crlf-agent", &cr)
		if cr.Agent != "crlf-agent" {
			t.Errorf("crlf-agent agent = %q, want its name", cr.Agent)
		}
		var page struct {
			Agents []agentCard `json:"agents"`
		}
		c.Call("agents/list", map[string]any{}).OK(t, "agents/list", &page)
		for _, a := range page.Agents {
			if a.Name == "crlf-agent" && a.Description != "Written on Windows." {
				t.Errorf("crlf-agent description = %q, want %q", a.Description, "Written on Windows.")
			}
		}
		want := "Line one.\nLine two.\n\nLine four."
		if cr.Instructions == nil || *cr.Instructions != want {
			t.Errorf("crlf-agent instructions = %s, want %q", sidecartest.MustMarshal(t, cr.Instructions), want)
		}
	})
}

func TestAgentsGetDropUnknownTools(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, direct, _ := agentsSetup(t, ctx, ec, func(c *config.Config) { c.DropUnknownTools = true })
		byName, _ := upstreamTools(t, direct)
		var got agentDetail
		c.Call("agents/get", map[string]any{"name": "builder"}).OK(t, "agents/get builder", &got)
		if len(got.Tools) != 1 || !bytes.Equal(got.Tools[0], byName["alpha"]) {
			t.Errorf("agents/get builder with DropUnknownTools: tools %s, want only the upstream's alpha", got.Tools)
		}
	})
}

// TestAgentsGetRefusedCaller: an upstream that refuses the caller's token
// makes agents/get fail the way the upstream does (401 with its
// WWW-Authenticate) and leak no tool schema; the same request with the
// token gets the tools.
func TestAgentsGetRefusedCaller(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		dir := t.TempDir()
		sidecartest.WriteTree(t, dir, pluginAgents())
		w := newWatcher(t, dir)
		up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless, PageSize: 2, Tools: richTools(), Token: "s3cret"})
		side := newSidecar(t, up.URL, w.Snapshot, nil)
		good := dialEra(t, ctx, ec, side, "s3cret")

		var d agentDetail
		good.Call("agents/get", map[string]any{"name": "reviewer"}).OK(t, "agents/get with the token", &d)
		if len(d.Tools) != 3 {
			t.Errorf("agents/get with the token: %d tools, want 3", len(d.Tools))
		}
		for _, token := range []string{"", "wrong"} {
			bad := *good
			bad.T, bad.Token = t, token
			r := bad.Call("agents/get", map[string]any{"name": "reviewer"})
			if r.Status != http.StatusUnauthorized {
				t.Errorf("agents/get with token %q = HTTP %d %s, want 401", token, r.Status, r.Body)
			}
			if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Bearer realm="upstream"`) {
				t.Errorf("agents/get with token %q: WWW-Authenticate %q, want the upstream's", token, got)
			}
			for _, leak := range []string{"inputSchema", "zeta", "query for"} {
				if bytes.Contains(r.Body, []byte(leak)) {
					t.Errorf("refused agents/get leaks %q: %s", leak, r.Body)
				}
			}
		}
	})
}

// TestAgentsDeclaredDespiteBadSkills: SKILL.md files that break the rules
// cost only themselves; the handshake through the sidecar still declares
// both extensions and the agents still list.
func TestAgentsDeclaredDespiteBadSkills(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		dir := t.TempDir()
		sidecartest.WriteTree(t, dir, map[string]string{
			"skills/mismatch/SKILL.md":    skillMD("other-name", "Name differs from its folder."),
			"skills/no-front/SKILL.md":    "# no frontmatter\n",
			"skills/bad-yaml/SKILL.md":    "---\nname: [unclosed\n---\n",
			"skills/not-utf8/SKILL.md":    "---\nname: not-utf8\ndescription: \xff\xfe\n---\n",
			"skills/timestamp/SKILL.md":   "---\nname: timestamp\ndescription: d\nwhen: !!timestamp 2024-01-01\n---\n",
			"agents/helper.md":            "---\nname: helper\ndescription: Helps.\n---\nHelp.\n",
			".claude-plugin/plugin.json":  `{"name":"broken-skills"}`,
			"skills/fine/SKILL.md":        skillMD("fine", "The one good skill."),
			"skills/fine/reference/x.txt": "x\n",
		})
		w := newWatcher(t, dir)
		if n := w.Snapshot().Skipped(); n < 4 {
			t.Fatalf("%d items skipped, want the bad SKILL.md files skipped: %+v", n, w.Snapshot().Problems())
		}
		up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless})
		c := dialEra(t, ctx, ec, newSidecar(t, up.URL, w.Snapshot, nil), "")
		ext := c.CS.InitializeResult().Capabilities.Extensions
		for _, id := range []string{rewrite.SkillsExtensionID, rewrite.AgentsExtensionID} {
			if _, ok := ext[id]; !ok {
				t.Errorf("capabilities.extensions through the sidecar lack %s: %v", id, ext)
			}
		}
		var pg struct {
			Agents []agentCard `json:"agents"`
		}
		c.Call("agents/list", nil).OK(t, "agents/list", &pg)
		if len(pg.Agents) != 1 || pg.Agents[0].Name != "helper" {
			t.Errorf("agents/list = %+v, want helper", pg.Agents)
		}
		var sk struct {
			Skills []listedSkill `json:"skills"`
		}
		c.Call("skills/list", nil).OK(t, "skills/list", &sk)
		if len(sk.Skills) != 1 || sk.Skills[0].URI != "skill://fine/SKILL.md" {
			t.Errorf("skills/list = %+v, want only the good skill", sk.Skills)
		}
	})
}

// TestAgentsEmptyRosterDeclared: with no plugin at all both extensions are
// declared and answer with empty listings.
func TestAgentsEmptyRosterDeclared(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := testupstream.Start(t, testupstream.Config{Stateless: true})
	c := dialVersion(t, ctx, newSidecar(t, up.URL, nil, nil), "", "")
	if _, ok := c.CS.InitializeResult().Capabilities.Extensions[rewrite.AgentsExtensionID]; !ok {
		t.Errorf("agents extension not declared with an empty roster")
	}
	var pg struct {
		Agents []agentCard `json:"agents"`
	}
	c.Call("agents/list", nil).OK(t, "agents/list", &pg)
	if pg.Agents == nil || len(pg.Agents) != 0 {
		t.Errorf("agents/list with no plugin = %v, want []", pg.Agents)
	}
}
