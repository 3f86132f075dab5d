package sidecar_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestSlashPathIsTheEndpoint: /mcp/ is the MCP endpoint exactly as /mcp
// is: a go-sdk client's legacy session there (POST initialize and calls,
// the GET stream, the DELETE that ends it) reaches the upstream and the
// sidecar's own methods; any other path under /mcp/ is 404.
func TestSlashPathIsTheEndpoint(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	eras := demo.BothEras()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method]++
		mu.Unlock()
		eras.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	s := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) { c.AuthGate = "none" }})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "slash", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect at /mcp/: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list at /mcp/: %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close at /mcp/: %v", err)
	}
	mu.Lock()
	got := map[string]int{http.MethodGet: seen[http.MethodGet], http.MethodDelete: seen[http.MethodDelete]}
	mu.Unlock()
	if got[http.MethodDelete] != 1 || got[http.MethodGet] < 1 {
		t.Errorf("the upstream saw %v from a session at /mcp/, want its GET stream and one DELETE", got)
	}

	// A method the sidecar answers itself, on the modern wire.
	resp, body := sidecartest.Post(t, s.URL+"/", `{"jsonrpc":"2.0","id":1,"method":"skills/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		sidecartest.Header("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "skills/list"))
	var list struct {
		Result struct {
			Skills []json.RawMessage `json:"skills"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &list); resp.StatusCode != http.StatusOK || err != nil || len(list.Result.Skills) == 0 {
		t.Errorf("skills/list at /mcp/: %d %s", resp.StatusCode, body)
	}

	for _, path := range []string{"/mcp/x", "/mcp/mcp", "/mcpx", "/"} {
		req, _ := http.NewRequest(http.MethodPost, s.Server.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
