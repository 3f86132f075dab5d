package upstreamfiles_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestOneSizeEverywhere: a plugin written with CRLF line ends, in front of
// a go-sdk upstream that serves the skill's files itself with CRLF turned
// into LF (as FastMCP's skill provider does): it lists SKILL.md and one
// file (over pages of one entry), serves the notes through a template, and
// leaves b.txt to the sidecar. Every size the sidecar states for a URI
// (skills/list, resources/directory/read, its own resources/list entries)
// is the size of the bytes a resources/read of it returns, and
// resources/list holds each URI once: the upstream's entry for the URIs it
// lists, the sidecar's for the rest.
func TestOneSizeEverywhere(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"SKILL.md":       "---\r\nname: crlf\r\ndescription: Written on Windows.\r\n---\r\nBody\r\n",
		"listed.md":      "listed\r\nfile\r\n",
		"notes/a.md":     "note\r\na\r\n",
		"notes/deep.txt": "deep\r\n",
		"b.txt":          "sidecar's\r\n",
	}
	for name, body := range files {
		p := filepath.Join(root, "skills", "crlf", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(root, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lf := func(name string) string { return strings.ReplaceAll(files[name], "\r\n", "\n") }
	s := mcp.NewServer(&mcp.Implementation{Name: "lf", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		name := strings.TrimPrefix(r.Params.URI, "skill://crlf/")
		if _, ok := files[name]; !ok || name == "b.txt" {
			return nil, mcp.ResourceNotFoundError(r.Params.URI)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: lf(name)}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "skill://crlf/SKILL.md", Name: "upstream-skill", MIMEType: "text/markdown"}, read)
	s.AddResource(&mcp.Resource{URI: "skill://crlf/listed.md", Name: "upstream-listed", MIMEType: "text/markdown"}, read)
	s.AddResource(&mcp.Resource{URI: "demo://other", Name: "other"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "skill://crlf/notes/{+path}", Name: "notes"}, read)
	for _, readsFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "reads first", false: "listings first"}[readsFirst], func(t *testing.T) {
			t.Parallel()
			oneSizeCase(t, snap, files, lf, s, readsFirst)
		})
	}
}

// oneSizeCase is TestOneSizeEverywhere with a sidecar of its own, reading
// each file before the listings or after them.
func oneSizeCase(t *testing.T, snap *catalog.Snapshot, files map[string]string, lf func(string) string, s *mcp.Server, readsFirst bool) {
	up := testupstream.Serve(t, s, &mcp.StreamableHTTPOptions{Stateless: true})
	side := sidecartest.Start(t, up.URL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.PageSize = "none", "auto", 2
	}}).URL

	// What a read of each URI returns, through the sidecar.
	served := map[string]int64{}
	readAll := func() {
		for name := range files {
			uri := "skill://crlf/" + name
			var res struct {
				Contents []struct {
					Text string `json:"text"`
				} `json:"contents"`
			}
			if err := json.Unmarshal(modernCall(t, side, "resources/read", map[string]any{"uri": uri}), &res); err != nil || len(res.Contents) != 1 {
				t.Fatalf("read %s: %v", uri, err)
			}
			served[uri] = int64(len(res.Contents[0].Text))
		}
		if served["skill://crlf/b.txt"] != int64(len(files["b.txt"])) || served["skill://crlf/notes/a.md"] != int64(len(lf("notes/a.md"))) {
			t.Fatalf("the case is wrong: reads served %v", served)
		}
	}

	type statement struct {
		where string
		e     statedEntry
	}
	var statements []statement
	stated := func(where string, entries []statedEntry) {
		for _, e := range entries {
			statements = append(statements, statement{where, e})
		}
	}
	if readsFirst {
		readAll()
	}
	// resources/list, every page: each URI once; the upstream's entries
	// for the URIs it lists.
	seen := map[string]statedEntry{}
	cursor := ""
	for range 20 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Resources  []statedEntry `json:"resources"`
			NextCursor string        `json:"nextCursor"`
		}
		if err := json.Unmarshal(modernCall(t, side, "resources/list", params), &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Resources {
			if _, dup := seen[e.URI]; dup {
				t.Errorf("resources/list lists %s twice", e.URI)
			}
			seen[e.URI] = e
		}
		stated("resources/list", page.Resources)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	for uri, name := range map[string]string{"skill://crlf/SKILL.md": "upstream-skill", "skill://crlf/listed.md": "upstream-listed"} {
		if seen[uri].Name != name {
			t.Errorf("resources/list entry of %s is %+v, want the upstream's (%s)", uri, seen[uri], name)
		}
	}
	for name := range files {
		if _, ok := seen["skill://crlf/"+name]; !ok {
			t.Errorf("resources/list lacks %s", name)
		}
	}
	// The sidecar's entry for a file the upstream serves by a template
	// states a size: the served one, checked above.
	if e := seen["skill://crlf/notes/a.md"]; e.Size == nil {
		t.Errorf("resources/list states no size for notes/a.md: %+v", e)
	}

	for _, dir := range []string{"skill://crlf", "skill://crlf/notes"} {
		var d struct {
			Resources []statedEntry `json:"resources"`
		}
		if err := json.Unmarshal(modernCall(t, side, "resources/directory/read", map[string]any{"uri": dir}), &d); err != nil {
			t.Fatal(err)
		}
		stated("resources/directory/read "+dir, d.Resources)
	}
	var list struct {
		Skills []entry `json:"skills"`
	}
	if err := json.Unmarshal(modernCall(t, side, "skills/list", nil), &list); err != nil || len(list.Skills) != 1 {
		t.Fatalf("skills/list: %v", err)
	}
	if !readsFirst {
		readAll()
	}
	for _, st := range statements {
		if want, ok := served[st.e.URI]; ok && st.e.Size != nil && *st.e.Size != want {
			t.Errorf("%s states %d bytes for %s; a read returns %d", st.where, *st.e.Size, st.e.URI, want)
		}
	}
	for _, r := range list.Skills[0].Resources {
		if r.Size != served[r.URI] {
			t.Errorf("skills/list states %d bytes for %s; a read returns %d", r.Size, r.URI, served[r.URI])
		}
	}
}

// statedEntry is a resources/list or directory entry as a client reads it.
type statedEntry struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
	Size *int64 `json:"size"`
}
