package methods_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

const crlfSkill = "---\r\nname: notes\r\ndescription: Take notes.\r\nmetadata:\r\n  b: \"2\"\r\n  a: \"1\"\r\n---\r\n# Notes\r\n\r\nWrite them down.\r\n"

// overlaySidecar builds a plugin folder whose skill notes has a CRLF
// SKILL.md and a local-only file, an upstream that serves the SKILL.md
// itself (as LF text, the way a normalising server would) and a blob, and
// the sidecar in front of both with the overlay on.
func overlaySidecar(t *testing.T, skillText *atomic.Value) (sidecarURL string, ov *methods.Overlay) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "skills", "notes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"SKILL.md": crlfSkill, "local.txt": "only on disk\r\n", "logo.bin": "disk bytes"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(root, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}

	s := mcp.NewServer(&mcp.Implementation{Name: "normalising", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "skill://notes/SKILL.md", Name: "notes"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: skillText.Load().(string)}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "skill://notes/logo.bin", Name: "logo"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 0xff}}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	ov = methods.NewOverlay(&methods.Upstream{URL: u}, 0, false)
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }, Overlay: ov})
	p, err := proxy.New(proxy.Options{Upstream: u, Local: h, Declaration: rewrite.SkillsSidecar()})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)
	return side.URL, ov
}

// modernCall posts one 2026-07-28 request and returns the result member.
func modernCall(t *testing.T, u, method string, params map[string]any) json.RawMessage {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if uri, ok := params["uri"].(string); ok {
		req.Header.Set("Mcp-Name", uri)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id":1`) {
				b = []byte(d)
			}
		}
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Error != nil {
		t.Fatalf("%s: reply %s (%v)", method, b, err)
	}
	return m.Result
}

type entry struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   []struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	} `json:"resources"`
}

// readBytes reads uri through the sidecar and returns the served bytes.
func readBytes(t *testing.T, u, uri string) []byte {
	t.Helper()
	var r struct {
		Contents []struct {
			Text *string `json:"text"`
			Blob *string `json:"blob"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(modernCall(t, u, "resources/read", map[string]any{"uri": uri}), &r); err != nil || len(r.Contents) != 1 {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if c := r.Contents[0]; c.Text != nil {
		return []byte(*c.Text)
	} else if c.Blob != nil {
		b, err := base64.StdEncoding.DecodeString(*c.Blob)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("resources/read %s: neither text nor blob", uri)
	return nil
}

// checkDigests reports every listed file whose digest or size is not that of
// the bytes a client reads.
func checkDigests(t *testing.T, u string, e entry) []string {
	t.Helper()
	var bad []string
	for _, r := range e.Resources {
		b := readBytes(t, u, r.URI)
		sum := sha256.Sum256(b)
		if d := "sha256:" + hex.EncodeToString(sum[:]); d != r.Digest || int64(len(b)) != r.Size {
			bad = append(bad, r.URI)
		}
	}
	return bad
}

func TestUpstreamServedFilesWin(t *testing.T) {
	t.Parallel()
	var text atomic.Value
	text.Store(strings.ReplaceAll(crlfSkill, "\r\n", "\n"))
	u, ov := overlaySidecar(t, &text)

	var got struct {
		Skill entry `json:"skill"`
	}
	if err := json.Unmarshal(modernCall(t, u, "skills/get", map[string]any{"uri": "skill://notes/SKILL.md"}), &got); err != nil {
		t.Fatal(err)
	}
	if bad := checkDigests(t, u, got.Skill); len(bad) > 0 {
		t.Errorf("published digest or size differs from the served bytes for %v", bad)
	}
	// The frontmatter equals what a client parses from the served SKILL.md.
	fm, _, err := catalog.ParseFrontmatter(readBytes(t, u, "skill://notes/SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(fm), string(got.Skill.Frontmatter)); diff != "" {
		t.Errorf("frontmatter differs from the served SKILL.md (-served +published):\n%s", diff)
	}

	// The upstream's file changes; a forwarded read shows it, and the next
	// skills/get carries the new digest.
	text.Store("---\nname: notes\ndescription: Take better notes.\n---\nNew body.\n")
	_ = readBytes(t, u, "skill://notes/SKILL.md")
	if n := ov.Mismatches.Load(); n != 1 {
		t.Errorf("Mismatches = %d after the upstream's bytes changed, want 1", n)
	}
	if err := json.Unmarshal(modernCall(t, u, "skills/get", map[string]any{"uri": "skill://notes/SKILL.md"}), &got); err != nil {
		t.Fatal(err)
	}
	if bad := checkDigests(t, u, got.Skill); len(bad) > 0 {
		t.Errorf("after the change, stale digest or size for %v", bad)
	}
	if !strings.Contains(string(got.Skill.Frontmatter), "better") {
		t.Errorf("frontmatter after the change = %s, want the upstream's new description", got.Skill.Frontmatter)
	}
}

// TestDigestCheckerCatchesDiskBytes shows the check above can fail: without
// the overlay the sidecar publishes the CRLF bytes on disk while the
// upstream serves LF, and the checker names the file.
func TestDigestCheckerCatchesDiskBytes(t *testing.T) {
	t.Parallel()
	var text atomic.Value
	text.Store(strings.ReplaceAll(crlfSkill, "\r\n", "\n"))
	u, _ := overlaySidecar(t, &text)
	var got struct {
		Skill entry `json:"skill"`
	}
	if err := json.Unmarshal(modernCall(t, u, "skills/get", map[string]any{"uri": "skill://notes/SKILL.md"}), &got); err != nil {
		t.Fatal(err)
	}
	// Break the entry the way a sidecar publishing disk bytes would.
	sum := sha256.Sum256([]byte(crlfSkill))
	for i := range got.Skill.Resources {
		if got.Skill.Resources[i].URI == "skill://notes/SKILL.md" {
			got.Skill.Resources[i].Digest = "sha256:" + hex.EncodeToString(sum[:])
			got.Skill.Resources[i].Size = int64(len(crlfSkill))
		}
	}
	if bad := checkDigests(t, u, got.Skill); len(bad) != 1 || bad[0] != "skill://notes/SKILL.md" {
		t.Errorf("checkDigests on disk-byte digests = %v, want [skill://notes/SKILL.md]", bad)
	}
}

// TestInvalidateRefreshes: after the proxy reports a resource change, the
// next listing carries the upstream's new bytes without any read between.
func TestInvalidateRefreshes(t *testing.T) {
	t.Parallel()
	var text atomic.Value
	text.Store(strings.ReplaceAll(crlfSkill, "\r\n", "\n"))
	u, ov := overlaySidecar(t, &text)
	get := func() entry {
		var got struct {
			Skill entry `json:"skill"`
		}
		if err := json.Unmarshal(modernCall(t, u, "skills/get", map[string]any{"uri": "skill://notes/SKILL.md"}), &got); err != nil {
			t.Fatal(err)
		}
		return got.Skill
	}
	before := get()
	text.Store("---\nname: notes\ndescription: Changed upstream.\n---\n")
	if stale := get(); string(stale.Frontmatter) != string(before.Frontmatter) {
		t.Fatalf("without a change notification the cached entry should stay; got %s", stale.Frontmatter)
	}
	ov.Invalidate()
	if after := get(); !strings.Contains(string(after.Frontmatter), "Changed upstream") {
		t.Errorf("after Invalidate the entry is %s, want the upstream's new frontmatter", after.Frontmatter)
	}
}

// TestForwardedReadOfLargestSkillFile: a 16 MiB file (the most SEP-2640
// lets a whole skill hold) that the upstream serves itself, as a blob, is
// read through the sidecar at its default limits and hashed on the way.
func TestForwardedReadOfLargestSkillFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "skills", "big")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"SKILL.md": "---\nname: big\ndescription: Big.\n---\n", "data.bin": "placeholder"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(root, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "skill://big/data.bin", Name: "data"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/octet-stream", Blob: data}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	ov := methods.NewOverlay(&methods.Upstream{URL: u}, 0, false)
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }, Overlay: ov})
	p, err := proxy.New(proxy.Options{Upstream: u, Local: h, Declaration: rewrite.SkillsSidecar()})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)

	res := modernCall(t, side.URL, "resources/read", map[string]any{"uri": "skill://big/data.bin"})
	var got struct {
		Contents []struct {
			Blob []byte `json:"blob"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(res, &got); err != nil || len(got.Contents) != 1 {
		t.Fatalf("read: %v, %d contents", err, len(got.Contents))
	}
	if sum, want := sha256.Sum256(got.Contents[0].Blob), sha256.Sum256(data); sum != want {
		t.Errorf("read %d bytes, not the %d the upstream served", len(got.Contents[0].Blob), len(data))
	}
}
