package upstreamfiles_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// overlaySidecarFor serves snap in front of upstream with the overlay on
// and the proxy at its default limits, assembled as the binary does; it
// returns the sidecar's URL and its metrics.
func overlaySidecarFor(t *testing.T, upstream string, snap *catalog.Snapshot) (string, *prometheus.Registry) {
	t.Helper()
	s := sidecartest.Start(t, upstream, sidecartest.Options{Snapshot: func() *catalog.Snapshot { return snap }, Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles = "none", "auto"
	}})
	return s.URL, s.Registry
}

// TestForwardedReadOfLargestSkillFile: a 16 MiB file that the upstream
// serves itself, as a blob, is read through the sidecar at its default
// limits and hashed on the way.
func TestForwardedReadOfLargestSkillFile(t *testing.T) {
	t.Parallel()
	snap, data := sidecartest.BigSkill(t)
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: sidecartest.BigFileURI, Name: "data"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/octet-stream", Blob: data}}}, nil
	})
	up := testupstream.Serve(t, s, &mcp.StreamableHTTPOptions{Stateless: true})
	side, _ := overlaySidecarFor(t, up.URL, snap)

	res := modernCall(t, side, "resources/read", map[string]any{"uri": sidecartest.BigFileURI})
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

// TestForwardedBigReadMemory: a 16 MiB skill file that the upstream serves
// is forwarded and hashed by the sidecar allocating a small multiple of
// the reply, and without holding any copy of it. The upstream writes a prebuilt SSE reply and the client
// discards what it reads, so nearly all that is allocated is the
// sidecar's.
func TestForwardedBigReadMemory(t *testing.T) {
	snap, data := sidecartest.BigSkill(t)
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
		"contents": []any{map[string]any{"uri": sidecartest.BigFileURI, "blob": base64.StdEncoding.EncodeToString(data)}}}})
	reply := []byte("event: message\ndata: " + string(msg) + "\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		if req.Method == "resources/list" { // the overlay's discovery: it serves the file
			list, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"resources": []any{map[string]any{"uri": sidecartest.BigFileURI, "name": "data"}}}})
			_, _ = w.Write([]byte("event: message\ndata: " + string(list) + "\n\n"))
			return
		}
		if req.Method == "resources/templates/list" {
			list, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"resourceTemplates": []any{}}})
			_, _ = w.Write([]byte("event: message\ndata: " + string(list) + "\n\n"))
			return
		}
		_, _ = w.Write(reply)
	}))
	t.Cleanup(up.Close)
	side, reg := overlaySidecarFor(t, up.URL, snap)

	read := func() int64 {
		req, _ := http.NewRequest(http.MethodPost, side, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+sidecartest.BigFileURI+`"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", "s")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	read() // warm: pools, connections
	probed := counter(t, reg, "skills_sidecar_digest_refreshes_total")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := read()
	runtime.ReadMemStats(&after)
	if n < int64(len(reply)) {
		t.Fatalf("client read %d bytes, want the whole %d-byte reply", n, len(reply))
	}
	if got := counter(t, reg, "skills_sidecar_digest_refreshes_total"); got != probed {
		t.Fatalf("the measured read probed the upstream %v times; want only the forwarded read", got-probed)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("forwarding and hashing a %d-byte reply allocated %d bytes (%.1f×)", len(reply), allocated, float64(allocated)/float64(len(reply)))
	// The reply is hashed as it passes (readWatch), never held: what is
	// allocated is the relay's buffers and the scan's, far below one copy
	// of the reply (it was 3× the reply while the reply was held whole).
	if limit := uint64(len(reply)) / 4; allocated > limit {
		t.Errorf("allocated %d bytes for a %d-byte reply, want at most 1/4 of it (%d): no copy of the reply", allocated, len(reply), limit)
	}
}
