package harness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrkUpstream sends what scripts/bench-wrk.sh's wrk scripts send: a
// legacy tools/call without a session gets a JSON reply, and a modern
// progress call with StreamHeader an SSE reply carrying every event.
func TestWrkUpstream(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewWrkUpstream())
	defer srv.Close()
	post := func(body string, h map[string]string) (string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return resp.Header.Get("Content-Type"), string(b)
	}
	ct, body := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		map[string]string{"MCP-Protocol-Version": "2025-11-25"})
	if ct != "application/json" || !strings.Contains(body, `"result"`) || !strings.Contains(body, `"hi"`) {
		t.Errorf("legacy echo: %s %s", ct, body)
	}
	meta := `"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	ct, body = post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"n":7},"_meta":{`+meta+`}}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "progress", StreamHeader: "1"})
	if n := strings.Count(body, "notifications/progress"); ct != "text/event-stream" || n != 7 || !strings.Contains(body, `"result"`) {
		t.Errorf("modern progress: %s, %d events: %s", ct, n, body)
	}
}
