package bridge

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A JSON-RPC id is a string or a number (2025-11-25 basic: RequestId),
// and a number is its value, not its spelling: go-sdk reads the id 1.0
// as the number 1 and answers with 1, as the TypeScript SDK (JSON.parse)
// does. The front knows the reply on a modern SSE stream as the answer
// to the client's request by its id, so a client's 1.0 answered 1 is
// still shaped for the legacy wire: here an input_required result, which
// the front does not carry to legacy clients, becomes its -32603.
func TestLegacyFrontMatchesIDsByValue(t *testing.T) {
	fx := newFrontFixture(t, 0)
	fx.server.AddTool(&mcp.Tool{Name: "asks", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "name?",
			RequestedSchema: map[string]any{"type": "object"}}}, RequestState: "s"}, nil
	})
	resp, body := post(t, fx.url, legacyInit, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	h := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"}
	for _, id := range []string{`1`, `1.0`, `10e-1`, `"x"`, `"\u0078"`} {
		resp, body := post(t, fx.url, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"asks","arguments":{}}}`, h)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("id %s: %d %s %s, want the upstream's SSE reply", id, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if !strings.Contains(body, `"code":-32603`) || !strings.Contains(body, "input_required_not_bridged") || strings.Contains(body, `"resultType"`) {
			t.Errorf("id %s: %s, want the input_required result as -32603 input_required_not_bridged", id, body)
		}
	}
}
