package methods_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestUpstreamToolsKeysAreExact: the upstream's tools are known by the
// name its clients read, the member name matched exactly (go-sdk decodes
// case-sensitively, JavaScript objects are keyed exactly), the last of
// duplicates counting; its pages end where a client's listing ends, at a
// page without an exact nextCursor. A tool the clients see under another
// name, or under none, is not the sidecar's to resolve by a folded one.
func TestUpstreamToolsKeysAreExact(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		answer(w, r, `{"tools":[{"name":"echo","Name":"shadow","inputSchema":{"type":"object"}},`+
			`{"Name":"folded","inputSchema":{"type":"object"}}],"NextCursor":"more"}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	src := &methods.UpstreamTools{Upstream: &onbehalf.Upstream{URL: u}}
	msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage("1"), Method: "agents/get"}
	tools, err := src.Tools(httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("")), msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools["echo"] == nil {
		names := []string{}
		for n := range tools {
			names = append(names, n)
		}
		t.Errorf("upstream tools by name = %q; want only echo, the exact name", names)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("pages fetched = %d; want 1 (a NextCursor member is no nextCursor)", n)
	}
}

// TestHostCompatServedContentsKeysAreExact: a "Text" member written after
// a served skill file's "text" is read two ways (go-sdk and JavaScript
// match member names exactly and take the text; a Go client decoding with
// encoding/json folds case and takes "folded"), so the loading and
// reading tools pass on neither: the file could not be read, as
// docs/behaviour.md says of an entry clients could read two ways. The
// client's own resources/read passes through, the upstream's bytes as
// they are.
func TestHostCompatServedContentsKeysAreExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	served := "---\r\nname: docs\r\ndescription: Writing docs.\r\n---\r\n# docs, as the upstream serves it\r\n"
	up := testupstream.Start(t, testupstream.Config{Files: map[string]string{"skill://docs/SKILL.md": served}})
	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodPost {
			return nil // a GET stream is relayed as it comes
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		// The contents entry of skill://docs/SKILL.md gets a folded Text
		// member after its text.
		if i := bytes.Index(b, []byte(`"contents":[`)); i >= 0 && bytes.Contains(b, []byte(`"uri":"skill://docs/SKILL.md"`)) {
			if j := bytes.Index(b[i:], []byte(`}]`)); j >= 0 {
				b = slices.Concat(b[:i+j], []byte(`,"Text":"folded"`), b[i+j:])
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	rp.FlushInterval = -1
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close) // after the sidecar's, registered later
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, compatPlugin())
	side := newSidecar(t, proxy.URL+target.Path, newWatcher(t, dir).Snapshot, func(c *config.Config) {
		c.HostCompat, c.UpstreamFiles = "prompts,tools", "auto"
	})
	via := dialEra(t, ctx, eras()[0], side, "")
	read, err := via.CS.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://docs/SKILL.md"})
	if err != nil || len(read.Contents) == 0 || read.Contents[0].Text != served {
		t.Fatalf("ReadResource = %+v, %v; want the exact text member, the upstream's bytes", read, err)
	}
	for _, c := range []*mcp.CallToolParams{
		{Name: "skill_load", Arguments: map[string]any{"skill": "docs"}},
		{Name: "skill_read", Arguments: map[string]any{"uri": "skill://docs/SKILL.md"}},
	} {
		res, err := via.CS.CallTool(ctx, c)
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("CallTool(%s) = %+v, %v", c.Name, res, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || strings.Contains(text, "folded") || !strings.Contains(text, "could not be read") {
			t.Errorf("CallTool(%s) = error %v, %q; want an error result saying the file could not be read", c.Name, res.IsError, text)
		}
	}
}
