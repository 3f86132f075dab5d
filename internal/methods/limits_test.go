package methods_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	jsonrpc "github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestOversizedEditedReplyRefused: the upstream replies the handler edits on
// their way back (resources/list, to append the sidecar's files) are held
// to the proxy's parse limit: past it the client gets 502 with data.reason
// upstream_message_too_large and its own id. A forwarded read of a catalog
// file the upstream serves itself is hashed as it passes, never held, so
// the limit does not apply to it: the caller gets the upstream's bytes.
func TestOversizedEditedReplyRefused(t *testing.T) {
	t.Parallel()
	const limit = 4096
	const readURI = "skill://acme/billing/refunds/examples/duplicate-charge.md"
	pad := strings.Repeat("x", limit)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "resources/list":
			// It serves readURI itself (so reads of it are forwarded), and
			// the page is past the limit (so the edit of it fails).
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resources":[{"uri":%q,"name":"dup"},{"uri":"up://big","name":%q}]}}`, req.ID, readURI, pad)
		case "resources/read":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"contents":[{"uri":%q,"mimeType":"text/markdown","text":%q}]}}`, req.ID, readURI, pad)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
		}
	}))
	t.Cleanup(up.Close)
	side := sidecartest.Start(t, up.URL, sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.MaxEventBytes = "none", "auto", limit
	}})

	for _, tt := range []struct {
		method string
		params map[string]any
	}{
		{"resources/list", map[string]any{}},
	} {
		hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		rp := sidecartest.PostJSON(t, side.URL, hdr, map[string]any{"jsonrpc": "2.0", "id": "big-1", "method": tt.method, "params": tt.params})
		e := rp.Failed(t, tt.method, http.StatusBadGateway, jsonrpc.CodeInternalError)
		var data struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(e.Data, &data)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(rp.Body, &m)
		if data.Reason != "upstream_message_too_large" || string(m.ID) != `"big-1"` {
			t.Errorf("%s: error data %s, id %s; want reason upstream_message_too_large and id \"big-1\"", tt.method, e.Data, m.ID)
		}
	}
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	rp := sidecartest.PostJSON(t, side.URL, hdr, map[string]any{"jsonrpc": "2.0", "id": "big-2", "method": "resources/read", "params": map[string]any{"uri": readURI}})
	want := fmt.Sprintf(`{"jsonrpc":"2.0","id":"big-2","result":{"contents":[{"uri":%q,"mimeType":"text/markdown","text":%q}]}}`, readURI, pad)
	if rp.Status != http.StatusOK || string(rp.Body) != want {
		t.Errorf("resources/read past the parse limit: HTTP %d, %d bytes; want 200 and the upstream's %d bytes", rp.Status, len(rp.Body), len(want))
	}
}
