package sidecar_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestBridgedInputRequiredThroughSidecar: a 2026-07-28 client calls, through the whole
// sidecar (era-bridge auto), a tool of a legacy-only go-sdk server that asks
// for sampling. The spec's client gets input_required, then retries with
// inputResponses and requestState: it must get the tool's result.
func TestBridgedInputRequiredThroughSidecar(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "q"}}}})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled: " + res.Content.(*mcp.TextContent).Text}}}, nil
	})
	up := sidecartest.Upstream(t, testupstream.Handler(s, nil))
	u, _ := startEraSidecar(t, up, "legacy", "auto")

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "sample"}
	_, _, body := sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample","arguments":{},`+meta+`}}`, h)
	var first struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(sseData(body)), &first); err != nil || first.Result.ResultType != "input_required" {
		t.Fatalf("first call: %s (%v), want input_required", body, err)
	}
	var key string
	for k := range first.Result.InputRequests {
		key = k
	}
	resp := `{"` + key + `":{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m"}}`
	_, _, body = sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample","arguments":{},"inputResponses":`+resp+`,"requestState":"`+first.Result.RequestState+`",`+meta+`}}`, h)
	if !strings.Contains(body, "sampled: Paris") {
		t.Fatalf("retry with inputResponses through the sidecar: %q, want the tool's result \"sampled: Paris\"", body)
	}
}

// sseData is the data of the last event of an SSE body, or the body.
func sseData(body string) string {
	var last string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			last = d
		}
	}
	if last == "" {
		return body
	}
	return last
}
