package methods_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestHostCompatReadEmptyTextFile: an empty text file (a Python package's
// __init__.py) read with the reading tool is a text content block whose
// text is "": the MCP schema requires TextContent's text, and the
// TypeScript SDK's client refuses a tools/call result whose text block
// lacks it, so the whole call fails there.
func TestHostCompatReadEmptyTextFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	up := compatUpstream(t, eras()[0], "")
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, map[string]string{
		"skills/tool/SKILL.md":        skillMD("tool", "A tool."),
		"skills/tool/pkg/__init__.py": "",
		"skills/tool/pkg/main.py":     "print(1)\n",
	})
	w := newWatcher(t, dir)
	side := newSidecar(t, up.URL, w.Snapshot, func(c *config.Config) { c.HostCompat, c.HostCompatPrefix = "tools", "kb-" })
	via := dialEra(t, ctx, eras()[0], side, "")
	r := via.Call("tools/call", map[string]any{"name": "kb-read", "arguments": map[string]any{"uri": "skill://tool/pkg/__init__.py"}})
	var res struct {
		Content []map[string]json.RawMessage `json:"content"`
		IsError bool                         `json:"isError"`
	}
	r.OK(t, "tools/call", &res)
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("tools/call(skill_read) = %s", r.Result)
	}
	c := res.Content[0]
	if string(c["type"]) != `"text"` {
		t.Fatalf("content[0] = %s, want a text block", r.Result)
	}
	if text, ok := c["text"]; !ok || string(text) != `""` {
		t.Errorf("content[0] = %s: a text block must carry text (here \"\")", r.Result)
	}
}
