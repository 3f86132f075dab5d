package bridge

import (
	"net/http"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// TestCheckModern walks the 2026-07-28 per-request rules in the order the
// spec's error codes rank them (SEP-2575, SEP-2243, SEP-2322): each case is
// a request a modern server must refuse with that code and status, or carry.
func TestCheckModern(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	hdr := func(method, name string) http.Header {
		h := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}}
		if name != "" {
			h.Set("Mcp-Name", name)
		}
		return h
	}
	cases := []struct {
		name   string
		h      http.Header
		body   string
		status int
		code   int // 0: carried
	}{
		{"carried", hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 0, 0},
		{"named carried", hdr("tools/call", "add"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",` + meta + `}}`, 0, 0},
		{"no _meta", hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, 400, -32602},
		{"no protocolVersion", hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, 400, -32602},
		{"no clientCapabilities", hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400, -32602},
		// The header names 2026-07-28, the body another version: the
		// mismatch ranks before the unsupported version.
		{"header vs body version", hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`, 400, -32020},
		{"unsupported version", http.Header{"Mcp-Protocol-Version": {"v999.0.0"}, "Mcp-Method": {"tools/list"}}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`, 400, -32022},
		{"Mcp-Method differs", hdr("prompts/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 400, -32020},
		{"Mcp-Method case differs", hdr("TOOLS/LIST", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 400, -32020},
		{"Mcp-Method omitted", http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 400, -32020},
		{"Mcp-Name omitted", hdr("tools/call", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",` + meta + `}}`, 400, -32020},
		{"Mcp-Name differs", hdr("resources/read", "file:///b"), `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a",` + meta + `}}`, 400, -32020},
		{"protocol header omitted", http.Header{"Mcp-Method": {"tools/list"}}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 400, -32020},
		{"capabilities not an object", hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`, 400, -32602},
		{"removed initialize", hdr("initialize", ""), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` + meta + `}}`, 404, -32601},
		{"removed ping", hdr("ping", ""), `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + meta + `}}`, 404, -32601},
		{"removed logging/setLevel", hdr("logging/setLevel", ""), `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info",` + meta + `}}`, 404, -32601},
		{"removed resources/subscribe", hdr("resources/subscribe", ""), `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"x",` + meta + `}}`, 404, -32601},
		{"removed tasks/list", hdr("tasks/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{` + meta + `}}`, 404, -32601},
		{"removed tasks/result", hdr("tasks/result", ""), `{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":"t",` + meta + `}}`, 404, -32601},
		{"inputResponses null", hdr("tools/call", "x"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":null,` + meta + `}}`, 400, -32602},
		{"inputResponses a number", hdr("tools/call", "x"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":42,` + meta + `}}`, 400, -32602},
		{"inputResponse value a number", hdr("tools/call", "x"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":{"k":42},` + meta + `}}`, 400, -32602},
		{"inputResponses well formed", hdr("tools/call", "x"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":{"k":{"action":"accept"}},` + meta + `}}`, 0, 0},
	}
	for _, c := range cases {
		msg, err := rewrite.ParseMessage([]byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := CheckModern(c.h, msg)
		switch {
		case c.code == 0 && r != nil:
			t.Errorf("%s: refused %d %d %s, want carried", c.name, r.Status, r.Code, r.Message)
		case c.code != 0 && r == nil:
			t.Errorf("%s: carried, want %d %d", c.name, c.status, c.code)
		case c.code != 0 && (r.Status != c.status || r.Code != c.code):
			t.Errorf("%s: %d %d (%s), want %d %d", c.name, r.Status, r.Code, r.Message, c.status, c.code)
		}
	}
}

// TestReplyStatus: a bridged method-not-found travels as HTTP 404 on the
// modern wire; other replies keep their status. The code is the one a
// client reads, its name matched exactly (go-sdk decodes case-sensitively,
// JavaScript objects are keyed exactly), the last of duplicates counting.
func TestReplyStatus(t *testing.T) {
	for _, c := range []struct {
		reply string
		want  int
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`, 404},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, 200},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, 200},
		{`not json`, 200},
		{`{"jsonrpc":"2.0","id":1,"error":{"Code":-32601,"message":"folded"}}`, 200},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"CODE":-32601,"message":"folded last"}}`, 200},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"Code":-32602,"message":"exact, folded last"}}`, 404},
	} {
		if got := replyStatus([]byte(c.reply), 200); got != c.want {
			t.Errorf("%s: %d, want %d", c.reply, got, c.want)
		}
	}
}

// TestCheckModernDecodesMcpName: a 2026-07-28 client reading a resource
// whose URI has non-ASCII letters sends Mcp-Name in the base64 form, which
// the bridge decodes before comparing (package wire); a name that decodes
// to another URI is still -32020.
func TestCheckModernDecodesMcpName(t *testing.T) {
	t.Parallel()
	uri := "skill://café/SKILL.md"
	body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	msg, err := rewrite.ParseMessage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"resources/read"}}
	for name, tt := range map[string]struct {
		header string
		code   int
	}{
		"encoded":          {wire.EncodeHeaderValue(uri), 0},
		"another, encoded": {wire.EncodeHeaderValue("skill://cafe/SKILL.md"), reply.CodeHeaderMismatch},
		"absent":           {"", reply.CodeHeaderMismatch},
	} {
		h := h.Clone()
		if tt.header != "" {
			h.Set("Mcp-Name", tt.header)
		}
		r := CheckModern(h, msg)
		if (tt.code == 0) != (r == nil) || r != nil && r.Code != tt.code {
			t.Errorf("%s: CheckModern = %+v, want code %d", name, r, tt.code)
		}
	}
}
