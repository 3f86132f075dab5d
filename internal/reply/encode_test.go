package reply

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMessages: the one encoding of the sidecar's own replies: the id as
// given (null when there is none), an error's data dropped when it cannot
// be encoded, and an event with one data line per line of its message.
func TestMessages(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"error", string(ErrorMessage(json.RawMessage(`"a"`), &Error{Code: -32602, Message: "m", Data: map[string]string{"reason": "r"}})),
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"m","data":{"reason":"r"}}}`},
		{"error without id", string(ErrorMessage(nil, &Error{Code: -32600, Message: "m"})),
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}`},
		{"error with data that cannot be encoded", string(ErrorMessage(json.RawMessage(`1`), &Error{Code: -32603, Message: "m", Data: func() {}})),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}`},
		{"result", string(ResultMessage(json.RawMessage(`7`), json.RawMessage(`{}`))), `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{"error object", string(ErrorObjectMessage(nil, json.RawMessage(`{"code":1,"message":"x"}`))),
			`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`},
		{"event", string(Event([]byte("{\n\"a\":1}"))), "event: message\ndata: {\ndata: \"a\":1}\n\n"},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}

// TestAnswerResponse: an Answer becomes a response with the caller's id:
// a JSON body with its length, a stream as it comes, or no body; 200
// unless it says otherwise; its headers carried.
func TestAnswerResponse(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	resp := (&Answer{Result: json.RawMessage(`{"ok":true}`), Header: http.Header{"Mcp-Session-Id": {"s"}}}).Response(req, json.RawMessage(`3`))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != `{"jsonrpc":"2.0","id":3,"result":{"ok":true}}` || resp.ContentLength != int64(len(b)) ||
		resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Mcp-Session-Id") != "s" || resp.Request != req {
		t.Errorf("result: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	resp = (&Answer{Status: http.StatusNotFound, ErrorObject: json.RawMessage(`{"code":-32601,"message":"x"}`)}).Response(req, json.RawMessage(`"q"`))
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 404 || string(b) != `{"jsonrpc":"2.0","id":"q","error":{"code":-32601,"message":"x"}}` {
		t.Errorf("error: %d %s", resp.StatusCode, b)
	}
	resp = (&Answer{Events: io.NopCloser(strings.NewReader("event: message\ndata: {}\n\n"))}).Response(req, nil)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.ContentLength != -1 || resp.Header.Get("Content-Type") != "text/event-stream" || string(b) != "event: message\ndata: {}\n\n" {
		t.Errorf("events: %d %d %v %q", resp.StatusCode, resp.ContentLength, resp.Header, b)
	}
	resp = (&Answer{Status: http.StatusAccepted}).Response(req, nil)
	if resp.StatusCode != 202 || resp.Body != http.NoBody || resp.Header.Get("Content-Type") != "" {
		t.Errorf("empty: %d %v", resp.StatusCode, resp.Header)
	}
}
