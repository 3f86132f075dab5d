package bridge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// TestLegacyFrontInitializeKeysAreExact: the legacy front reads a legacy
// initialize's params as a legacy server does, the go-sdk one here (its
// decoder matches member names exactly, as JavaScript objects are keyed):
// a member spelled in another case is absent, and of a member written
// twice the last exact spelling counts. The version the front answers and
// the capabilities and clientInfo it tells the upstream are those the
// go-sdk server reads from the same bytes.
func TestLegacyFrontInitializeKeysAreExact(t *testing.T) {
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` +
		`"protocolVersion":"2025-03-26","ProtocolVersion":"2025-06-18",` +
		`"capabilities":{"roots":{}},"Capabilities":{"sampling":{}},` +
		`"clientInfo":{"name":"exact","version":"1"},"CLIENTINFO":{"name":"folded","version":"1"}}}`

	// What a legacy go-sdk server reads.
	legacy := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	ls := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return legacy }, nil))
	defer ls.Close()
	_, body := post(t, ls.URL, init, nil)
	wantVersion, _ := rewrite.GetString(sseData(body), "result", "protocolVersion")
	var params *mcp.InitializeParams
	for ss := range legacy.Sessions() {
		params = ss.InitializeParams()
	}
	if wantVersion != "2025-03-26" || params == nil || params.Capabilities == nil || params.Capabilities.Sampling != nil ||
		params.ClientInfo == nil || params.ClientInfo.Name != "exact" {
		t.Fatalf("go-sdk server read version %q, params %+v: not the exact members", wantVersion, params)
	}

	var mu sync.Mutex
	var discover []byte
	fx := newFrontFixtureWith(t, 4, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if m, _ := rewrite.GetString(b, "method"); m == "server/discover" {
				mu.Lock()
				discover = b
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	resp, body := post(t, fx.url, init, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("front initialize: %d %s", resp.StatusCode, body)
	}
	if v, _ := rewrite.GetString(sseData(body), "result", "protocolVersion"); v != wantVersion {
		t.Errorf("front answered protocolVersion %q; the go-sdk server %q", v, wantVersion)
	}
	mu.Lock()
	defer mu.Unlock()
	caps, _ := rewrite.GetKey(discover, []string{"params", "_meta", metaClientCaps})
	var c map[string]json.RawMessage
	if json.Unmarshal(caps, &c) != nil || c["sampling"] != nil || c["roots"] == nil {
		t.Errorf("front told the upstream clientCapabilities %s; want the exact member's, {\"roots\":{}}", caps)
	}
	if name, _ := rewrite.GetString(discover, "params", "_meta", metaClientInfo, "name"); name != "exact" {
		t.Errorf("front told the upstream clientInfo named %q; want %q", name, "exact")
	}
}

// sseData is the data of a body's first SSE event, or the body itself when
// it is plain JSON.
func sseData(body string) []byte {
	if rewrite.Valid([]byte(body)) {
		return []byte(body)
	}
	r := rewrite.NewReader(bytes.NewReader([]byte(body)), 1<<20)
	if ev, err := r.Next(); err == nil {
		return ev.Data
	}
	return []byte(body)
}

// FuzzInitializeParams holds initializeParams to a reading of the same
// params through a map, whose keys encoding/json matches exactly (last of
// duplicates winning), as a legacy server reads them.
func FuzzInitializeParams(f *testing.F) {
	f.Add([]byte(`{"protocolVersion":"2025-03-26","ProtocolVersion":"2025-06-18","capabilities":{},"Capabilities":{"sampling":{}}}`))
	f.Add([]byte(`{"protocolVersion":null,"clientInfo":{"name":"a"},"clientInfo":5,"protocol\u0056ersion":"x"}`))
	f.Add([]byte(` null `))
	f.Add([]byte(`{"ProtocolVersion":5}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) && len(bytes.TrimSpace(in)) > 0 {
			return // a request's params are valid JSON
		}
		version, caps, info, ok := initializeParams(in)
		var p map[string]json.RawMessage
		var want string
		wantOK := len(bytes.TrimSpace(in)) == 0 || json.Unmarshal(in, &p) == nil
		if raw, found := p["protocolVersion"]; found && json.Unmarshal(raw, &want) != nil {
			wantOK = false
		}
		if ok != wantOK {
			t.Fatalf("initializeParams(%q) ok %v; want %v", in, ok, wantOK)
		}
		if ok && (version != want || !bytes.Equal(caps, p["capabilities"]) || !bytes.Equal(info, p["clientInfo"])) {
			t.Fatalf("initializeParams(%q) = %q, %s, %s; want %q, %s, %s", in, version, caps, info, want, p["capabilities"], p["clientInfo"])
		}
	})
}
