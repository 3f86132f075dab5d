package upstreamfiles_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestTransientListingErrorNotKept: one transient JSON-RPC error (-32603)
// on the first resources/templates/list cuts that discovery short; the set
// it gave answers that request only, so the next skills/list asks again and
// publishes the digest of the upstream's LF bytes (found in review: the cut
// set was kept for the TTL, publishing the plugin's digests; docs/design.md, decision 2).
func TestTransientListingErrorNotKept(t *testing.T) {
	snap := discoveryPlugin(t, []string{"notes"}, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "templated", Version: "1"}, nil)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "skill://notes/{file}", Name: "notes files"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if _, ok := snap.File(r.Params.URI); !ok {
				return nil, mcp.ResourceNotFoundError(r.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: lfServed(snap, r.Params.URI)}}}, nil
		})
	inner := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})
	var failed atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(b, &m)
		if m.Method == "resources/templates/list" && failed.CompareAndSwap(false, true) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"database busy"}}`))
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	side, _ := overlaySidecarFor(t, up.URL, snap)
	for i := range 2 {
		res, err := callAs(side, nil, "skills/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		got := skillsOf(t, res)
		uri := "skill://notes/ref0.md"
		if d := publishedDigest(t, got["skill://notes/SKILL.md"], uri); d != digestOf(lfServed(snap, uri)) && i == 1 {
			t.Fatalf("listing %d, after one transient -32603: %s published %s, want the upstream's LF digest %s (the failed discovery was kept)", i, uri, d, digestOf(lfServed(snap, uri)))
		}
	}
}
