package demo_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestSkillFiles: the upstream lists every SKILL.md, offers one template
// per skill with an examples/ folder, serves both as CRLF text, leaves
// other files alone and, with drift, changes a file after its first read.
func TestSkillFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a/SKILL.md":             "---\nname: a\n---\nA\n",
		"a/examples/one.md":      "one\ntwo\n",
		"b/c/SKILL.md":           "---\r\nname: c\r\n---\r\nC\n",
		"b/c/scripts/run.py":     "print(1)\n",
		"b/c/examples/not-a-dir": "x\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, drift := range []bool{false, true} {
		s := demo.NewServer()
		n, err := demo.SkillFiles(s, dir, drift)
		if err != nil || n != 4 {
			t.Fatalf("SkillFiles = %d, %v; want the 2 SKILL.md and 2 examples", n, err)
		}
		srv := httptest.NewServer(testupstream.Handler(s, nil))
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		slices.Sort(uris)
		if want := []string{"demo://logo.png", "demo://readme", "skill://a/SKILL.md", "skill://b/c/SKILL.md"}; !slices.Equal(uris, want) {
			t.Errorf("resources/list = %v, want %v", uris, want)
		}
		tpl, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var tpls []string
		for _, r := range tpl.ResourceTemplates {
			tpls = append(tpls, r.URITemplate)
		}
		slices.Sort(tpls)
		if want := []string{"skill://a/examples/{file}", "skill://b/c/examples/{file}"}; !slices.Equal(tpls, want) {
			t.Errorf("resources/templates/list = %v, want %v", tpls, want)
		}
		for uri, want := range map[string]string{
			"skill://a/SKILL.md":        "---\r\nname: a\r\n---\r\nA\r\n",
			"skill://b/c/SKILL.md":      "---\r\nname: c\r\n---\r\nC\r\n",
			"skill://a/examples/one.md": "one\r\ntwo\r\n",
		} {
			for read := range 2 {
				r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("read %s: %v", uri, err)
				}
				got, w := r.Contents[0].Text, want
				if drift && read > 0 {
					w += "changed after read 1\r\n"
				}
				if got != w {
					t.Errorf("drift %v: read %d of %s = %q, want %q", drift, read+1, uri, got, w)
				}
			}
		}
		for _, uri := range []string{"skill://b/c/scripts/run.py", "skill://a/examples/../SKILL.md", "skill://a/examples/missing.md"} {
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("read %s: %v, want not found", uri, err)
			}
		}
		cs.Close()
		srv.Close()
	}
}
