package methods_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// Wire constants the tests spell out themselves rather than borrow from the
// code under test (sidecartest holds the versions and the request _meta keys).
const (
	metaServerKey = "io.modelcontextprotocol/serverInfo"
	metaAgentKey  = "io.skills-sidecar/agent"
)

// pngBytes is a small PNG-looking blob: not valid UTF-8, so served as blob.
var pngBytes = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0xff, 0xfe, 0x80}

// skillMD returns a conforming SKILL.md for a skill named name.
func skillMD(name, description string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\nlicense: Apache-2.0\n---\n# " + name + "\n\nUse it well.\n"
}

// newWatcher loads dir once; the tests call Reload themselves, so nothing
// runs in the background.
func newWatcher(t testing.TB, dir string) *catalog.Watcher {
	t.Helper()
	w, err := catalog.NewWatcher(dir, catalog.Options{PollInterval: -1, NoEvents: true}, nil)
	if err != nil {
		t.Fatalf("NewWatcher(%s) = %v", dir, err)
	}
	return w
}

// newSidecar starts the sidecar as the binary assembles it (package
// sidecar) in front of upstreamURL, serving snap, with the auth gate, the
// upstream-files overlay off unless edit turns them on (the era bridge
// is at its default, auto), and returns
// its MCP endpoint. edit, when not nil, changes the configuration.
func newSidecar(t testing.TB, upstreamURL string, snap func() *catalog.Snapshot, edit func(*config.Config)) string {
	t.Helper()
	if snap == nil {
		snap = func() *catalog.Snapshot { return nil }
	}
	return sidecartest.Start(t, upstreamURL, sidecartest.Options{Snapshot: snap, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles = "none", "off"
		if edit != nil {
			edit(c)
		}
	}}).URL
}

// pdfSidecar writes the pdf-processing plugin to a folder of its own,
// starts an upstream with cfg in ec's era (cfg.Stateless is set from it)
// and a sidecar in front of it (edit as newSidecar's), and dials the
// sidecar in ec's era.
func pdfSidecar(t *testing.T, ctx context.Context, ec eraCase, cfg testupstream.Config, edit func(*config.Config)) (*sidecartest.Caller, *testupstream.Upstream, *catalog.Watcher) {
	t.Helper()
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginPDF())
	w := newWatcher(t, dir)
	cfg.Stateless = ec.stateless
	up := testupstream.Start(t, cfg)
	return dialEra(t, ctx, ec, newSidecar(t, up.URL, w.Snapshot, edit), ""), up, w
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// dialEra connects a go-sdk client to endpoint in ec's era: the legacy
// case asks for 2025-11-25 (the era bridge would otherwise put a default
// client, which asks for 2026-07-28, on the modern wire in front of the
// stateful upstream); the modern case asks for the default and gets
// 2026-07-28 from the stateless upstream.
func dialEra(t testing.TB, ctx context.Context, ec eraCase, endpoint, token string) *sidecartest.Caller {
	t.Helper()
	c := dialVersion(t, ctx, endpoint, token, ec.version)
	if want := ec.name == "modern"; c.Modern != want {
		t.Fatalf("Connect(%s) for the %s case negotiated modern=%v", endpoint, ec.name, c.Modern)
	}
	return c
}

// dialVersion connects a go-sdk client asking for version ("" is the
// SDK's default, 2026-07-28) and returns a caller in the era negotiated.
func dialVersion(t testing.TB, ctx context.Context, endpoint, token, version string) *sidecartest.Caller {
	t.Helper()
	// A transport of its own: httptest.Server.Close in a parallel test
	// closes http.DefaultTransport's idle connections, which can break one
	// this client has just dialed ("CloseIdleConnections called").
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Timeout: 20 * time.Second, Transport: tr}
	if token != "" {
		hc.Transport = bearer{token: token, next: tr}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: 1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect(%s) = %v", endpoint, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	v := cs.InitializeResult().ProtocolVersion
	switch v {
	case sidecartest.LegacyVersion, sidecartest.ModernVersion:
	default:
		t.Fatalf("negotiated version %q, want %s or %s", v, sidecartest.LegacyVersion, sidecartest.ModernVersion)
	}
	return &sidecartest.Caller{T: t, Endpoint: endpoint, Modern: v == sidecartest.ModernVersion, Session: cs.ID(), Token: token, CS: cs}
}

// eraCase is one era and the upstream that puts a go-sdk client in it.
type eraCase struct {
	name      string
	stateless bool
	version   string // what the client asks for ("" the SDK's default)
}

func eras() []eraCase {
	return []eraCase{{name: "legacy", stateless: false, version: sidecartest.LegacyVersion}, {name: "modern", stateless: true}}
}

// eachEra runs fn as a parallel subtest per era, with a context bounded to
// 30 seconds.
func eachEra(t *testing.T, fn func(t *testing.T, ctx context.Context, ec eraCase)) {
	t.Helper()
	for _, ec := range eras() {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fn(t, ctx, ec)
		})
	}
}

// wireCode returns the JSON-RPC code of an error a go-sdk client returned.
func wireCode(err error) (int, bool) {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return int(we.Code), true
	}
	return 0, false
}

// jsonOf round-trips v through JSON, for comparing what went over the wire.
func jsonOf(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
