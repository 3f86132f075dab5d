package demo_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
)

// TestStartServesBothEras: the embedded default answers a go-sdk client's
// legacy session and a stateless 2026-07-28 request on the same URL.
func TestStartServesBothEras(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, stop, err := demo.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("legacy connect: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("legacy tools/list: %v", err)
	}

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("modern request got a session %q; the stateless era has none", sid)
	}
	data := raw
	if i := strings.Index(string(raw), "data: "); i >= 0 { // an SSE reply
		data = []byte(strings.SplitN(string(raw[i+6:]), "\n", 2)[0])
	}
	var reply struct {
		Result *struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &reply); err != nil || reply.Result == nil || len(reply.Result.Tools) == 0 {
		t.Fatalf("modern tools/list = HTTP %d %s; want a result with tools", resp.StatusCode, raw)
	}
}
