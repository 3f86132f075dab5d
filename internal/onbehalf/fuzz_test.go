package onbehalf_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// FuzzReadReply: whatever the upstream sends, ReadReply never panics, and
// what it accepts as the answer is one JSON-RPC response or error whose id
// is the request's (or an error with id null) and whose bytes are in the
// reply.
func FuzzReadReply(f *testing.F) {
	const id = `"skills-sidecar/auth/abc"`
	for _, seed := range []struct {
		sse  bool
		body string
	}{
		{false, `{"jsonrpc":"2.0","id":"skills-sidecar/auth/abc","result":{}}`},
		{false, `{"jsonrpc":"2.0","id":"skills-sidecar\/auth\/abc","result":{}}`},
		{false, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{false, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`},
		{false, `[{"jsonrpc":"2.0","id":"skills-sidecar/auth/abc","result":{}}]`},
		{false, ``},
		{true, "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"skills-sidecar/auth/abc\",\"result\":{}}\n\n"},
		{true, "data: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\n"},
		{true, ": c\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":\"skills-sidecar/auth/abc\",\"result\":1}\r\r"},
	} {
		f.Add(seed.sse, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, sse bool, body []byte) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		m, err := onbehalf.ReadReply(ct, bytes.NewReader(body), json.RawMessage(id), 1<<16)
		if err != nil {
			return
		}
		if m.Kind != rewrite.KindResponse && m.Kind != rewrite.KindError {
			t.Fatalf("ReadReply(%q) accepted a %v", body, m.Kind)
		}
		var got string
		if json.Unmarshal(m.ID, &got) != nil || got != "skills-sidecar/auth/abc" {
			if !(m.Kind == rewrite.KindError && string(m.ID) == "null") {
				t.Fatalf("ReadReply(%q) accepted id %s, want %s", body, m.ID, id)
			}
		}
		if m.Kind == rewrite.KindResponse && !json.Valid(m.Result) {
			t.Fatalf("ReadReply(%q) result %q is not JSON", body, m.Result)
		}
	})
}
