package upstreamfiles_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

const crlfSkill = "---\r\nname: notes\r\ndescription: Take notes.\r\nmetadata:\r\n  b: \"2\"\r\n  a: \"1\"\r\n---\r\n# Notes\r\n\r\nWrite them down.\r\n"

// overlayConfig says how overlayRig builds the overlay in front of its
// upstream; the zero value is the sidecar's default setup.
type overlayConfig struct {
	ttl    time.Duration    // NewOverlay's ttl (--upstream-files-ttl); 0 means its default
	shared bool             // NewOverlay's shared (--upstream-files-shared)
	now    func() time.Time // the overlay's clock; nil keeps the real one
	// skillMD is the plugin folder's notes/SKILL.md; "" means crlfSkill.
	skillMD string
	// portability is --frontmatter-portability; "" keeps its default.
	portability string
	// hostCompat is --host-compat; "" keeps it off.
	hostCompat string
}

// overlayEnv is a sidecar with the overlay on, in front of an upstream that
// records the reads reaching it.
type overlayEnv struct {
	url string
	ov  *upstreamfiles.Overlay
	reg *prometheus.Registry // the sidecar's metrics

	mu    sync.Mutex
	reads [][2]string // Authorization and uri of every resources/read the upstream received
}

// readsBy returns the URIs of the resources/read requests that reached the
// upstream with this Authorization header value.
func (e *overlayEnv) readsBy(auth string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.reads {
		if r[0] == auth {
			out = append(out, r[1])
		}
	}
	return out
}

// overlaySidecar builds a plugin folder whose skill notes has a CRLF
// SKILL.md and a local-only file, an upstream that serves the SKILL.md
// itself (as LF text, the way a normalising server would) and a blob, and
// the sidecar in front of both with the overlay on.
func overlaySidecar(t *testing.T, skillText *atomic.Value) (sidecarURL string, e *overlayEnv) {
	t.Helper()
	e = overlayRig(t, skillText, overlayConfig{})
	return e.url, e
}

// overlayRig is overlaySidecar with the overlay built as cfg says.
func overlayRig(t *testing.T, skillText *atomic.Value, cfg overlayConfig) *overlayEnv {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "skills", "notes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	skillMD := cfg.skillMD
	if skillMD == "" {
		skillMD = crlfSkill
	}
	for name, body := range map[string]string{"SKILL.md": skillMD, "local.txt": "only on disk\r\n", "logo.bin": "disk bytes"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := catalog.Load(root, catalog.Options{FrontmatterPortability: cfg.portability})
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
	e := &overlayEnv{}
	h := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if m, err := rewrite.ParseMessage(body); err == nil && m.Kind == rewrite.KindRequest && m.Method == "resources/read" {
			var p struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(m.Params, &p)
			e.mu.Lock()
			e.reads = append(e.reads, [2]string{r.Header.Get("Authorization"), p.URI})
			e.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	side := sidecartest.Start(t, up.URL, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.UpstreamFilesShared = "none", "auto", cfg.shared
		if cfg.ttl > 0 {
			c.UpstreamFilesTTL = cfg.ttl
		}
		if cfg.portability != "" {
			c.FrontmatterPortability = cfg.portability
		}
		c.HostCompat = cfg.hostCompat
	}})
	e.ov, e.reg, e.url = side.Overlay, side.Registry, side.URL
	if cfg.now != nil {
		upstreamfiles.SetOverlayClock(e.ov, cfg.now)
	}
	return e
}

// modernCall posts one 2026-07-28 request and returns the result member.
func modernCall(t *testing.T, u, method string, params map[string]any) json.RawMessage {
	t.Helper()
	return modernCallAs(t, u, "", method, params)
}

// modernCallAs is modernCall with auth, when not empty, as the caller's
// Authorization header.
func modernCallAs(t *testing.T, u, auth, method string, params map[string]any) json.RawMessage {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	h := sidecartest.Header("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method)
	if uri, ok := params["uri"].(string); ok {
		h.Set("Mcp-Name", uri)
	}
	if name, ok := params["name"].(string); ok { // tools/call, prompts/get
		h.Set("Mcp-Name", name)
	}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	resp, b := sidecartest.Post(t, u, string(body), h)
	b = messageOf(resp.Header, b)
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
	return readBytesAs(t, u, "", uri)
}

// readBytesAs is readBytes with auth, when not empty, as the caller's
// Authorization header.
func readBytesAs(t *testing.T, u, auth, uri string) []byte {
	t.Helper()
	var r struct {
		Contents []struct {
			Text *string `json:"text"`
			Blob *string `json:"blob"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(modernCallAs(t, u, auth, "resources/read", map[string]any{"uri": uri}), &r); err != nil || len(r.Contents) != 1 {
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
	u, e := overlaySidecar(t, &text)

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
	if n := counter(t, e.reg, "skills_sidecar_digest_mismatches_total"); n != 1 {
		t.Errorf("digest_mismatches_total = %v after the upstream's bytes changed, want 1", n)
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
	u, e := overlaySidecar(t, &text)
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
	e.ov.Invalidate()
	if after := get(); !strings.Contains(string(after.Frontmatter), "Changed upstream") {
		t.Errorf("after Invalidate the entry is %s, want the upstream's new frontmatter", after.Frontmatter)
	}
}

// notesURI is the SKILL.md of the skill overlayRig serves.
const notesURI = "skill://notes/SKILL.md"

// notesEntry returns the skills/get entry of notes as the caller with
// Authorization auth ("" for none) is told it.
func notesEntry(t *testing.T, u, auth string) entry {
	t.Helper()
	var got struct {
		Skill entry `json:"skill"`
	}
	if err := json.Unmarshal(modernCallAs(t, u, auth, "skills/get", map[string]any{"uri": notesURI}), &got); err != nil {
		t.Fatal(err)
	}
	return got.Skill
}

// publishedDigest returns the digest e publishes for uri.
func publishedDigest(t *testing.T, e entry, uri string) string {
	t.Helper()
	for _, r := range e.Resources {
		if r.URI == uri {
			return r.Digest
		}
	}
	t.Fatalf("entry %s lists no %s", e.URI, uri)
	return ""
}

// digestOf is the SEP-2640 digest of text's bytes.
func digestOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestUpstreamFilesShared: with --upstream-files-shared, what one caller's
// reads learn is what every caller is told. A second caller with other
// credentials makes the upstream read nothing and gets the same entry, and
// when the first caller's forwarded read shows new bytes, the second caller
// is told the new digest without the upstream being asked on its behalf.
// Per authorization context (the default) the second caller is asked about
// with its own credentials and keeps its own entry.
func TestUpstreamFilesShared(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		shared bool
		// bAsked: caller B's first listing makes the upstream read with B's credentials.
		bAsked bool
		// bSeesA: B's listing carries the bytes A's forwarded read saw.
		bSeesA bool
	}{
		{name: "shared", shared: true, bAsked: false, bSeesA: true},
		{name: "per-caller", shared: false, bAsked: true, bSeesA: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const alice, bob = "Bearer alice", "Bearer bob"
			oldText, newText := strings.ReplaceAll(crlfSkill, "\r\n", "\n"), "---\nname: notes\ndescription: Changed.\n---\n"
			var text atomic.Value
			text.Store(oldText)
			e := overlayRig(t, &text, overlayConfig{shared: tt.shared})

			a := notesEntry(t, e.url, alice)
			if got := e.readsBy(alice); len(got) != 2 || slices.Contains(got, "skill://notes/local.txt") {
				t.Fatalf("caller A's skills/get: the upstream read %v with A's credentials, want each of the 2 files it serves once (and not local.txt, which it does not list)", got)
			}
			b := notesEntry(t, e.url, bob)
			if got := e.readsBy(bob); (len(got) > 0) != tt.bAsked {
				t.Errorf("caller B's skills/get: the upstream read %v with B's credentials, want reads: %v", got, tt.bAsked)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("caller B's entry differs from caller A's (-A +B):\n%s", diff)
			}

			// The upstream's SKILL.md changes and caller A reads it through
			// the sidecar; caller B lists again.
			text.Store(newText)
			if got := string(readBytesAs(t, e.url, alice, notesURI)); got != newText {
				t.Fatalf("caller A read %q, want the upstream's new text", got)
			}
			bReads := len(e.readsBy(bob))
			b = notesEntry(t, e.url, bob)
			if got := e.readsBy(bob)[bReads:]; len(got) != 0 {
				t.Errorf("caller B's second skills/get: the upstream read %v, want nothing (the entry is cached)", got)
			}
			want := digestOf(oldText)
			if tt.bSeesA {
				want = digestOf(newText)
			}
			if got := publishedDigest(t, b, notesURI); got != want {
				t.Errorf("after caller A read the new bytes, caller B is told %s = %s, want %s", notesURI, got, want)
			}
		})
	}
}

// TestUpstreamFilesExpire: what was learned is trusted for the TTL and no
// longer. Within it a file the upstream changed keeps its old digest and
// the upstream is not asked; past it the next listing asks again and
// publishes the new digest. The overlay's clock is stepped, not waited for.
func TestUpstreamFilesExpire(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	start := time.Unix(1_700_000_000, 0)
	var elapsed atomic.Int64 // nanoseconds since start
	now := func() time.Time { return start.Add(time.Duration(elapsed.Load())) }
	oldText, newText := strings.ReplaceAll(crlfSkill, "\r\n", "\n"), "---\nname: notes\ndescription: Changed.\n---\n"
	var text atomic.Value
	text.Store(oldText)
	e := overlayRig(t, &text, overlayConfig{ttl: ttl, now: now})

	if got := publishedDigest(t, notesEntry(t, e.url, ""), notesURI); got != digestOf(oldText) {
		t.Fatalf("first skills/get publishes %s, want the upstream's %s", got, digestOf(oldText))
	}
	text.Store(newText)
	reads := len(e.readsBy(""))
	elapsed.Store(int64(ttl - time.Second))
	if got := publishedDigest(t, notesEntry(t, e.url, ""), notesURI); got != digestOf(oldText) {
		t.Errorf("within the TTL skills/get publishes %s, want the cached %s", got, digestOf(oldText))
	}
	if got := e.readsBy("")[reads:]; len(got) != 0 {
		t.Errorf("within the TTL the upstream was read %v, want nothing", got)
	}
	elapsed.Store(int64(ttl + time.Second))
	after := notesEntry(t, e.url, "")
	if got := e.readsBy("")[reads:]; !slices.Contains(got, notesURI) {
		t.Errorf("past the TTL the upstream was read %v, want %s asked again", got, notesURI)
	}
	if got := publishedDigest(t, after, notesURI); got != digestOf(newText) {
		t.Errorf("past the TTL skills/get publishes %s, want the upstream's new %s", got, digestOf(newText))
	}
}

// counter returns the value of the counter name (no labels) in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
