package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type classifyCase struct {
	status int
	ct     string
	body   string
	want   Outcome
}

func classifyCases() map[string]classifyCase {
	noReply := func(status int, mt string) Outcome {
		return Outcome{Class: ClassNoReply, Kind: fmt.Sprintf("http %d %s, ended without result or error", status, mt)}
	}
	return map[string]classifyCase{
		"json result": {200, "application/json", `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, Outcome{Class: ClassResult}},
		"json error with reason": {502, "application/json",
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"upstream refused","data":{"reason":"upstream_unreachable"}}}`,
			Outcome{Class: ClassError, Kind: "http 502, code -32603, reason upstream_unreachable"}},
		"json error without data": {200, "application/json; charset=utf-8", `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad cursor"}}`,
			Outcome{Class: ClassError, Kind: "http 200, code -32602, reason -"}},
		"sse notification then result": {200, "text/event-stream",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
				"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", Outcome{Class: ClassResult}},
		"sse crlf and multi-line data": {200, "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":7,\"result\":{}}\r\n\r\n", Outcome{Class: ClassResult}},
		"sse error": {200, "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32000,\"message\":\"x\"}}\n\n",
			Outcome{Class: ClassError, Kind: "http 200, code -32000, reason -"}},
		// The broken replies the soak exists to catch.
		"sse ends after a notification": {200, "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n", noReply(200, "text/event-stream")},
		"sse last event not terminated": {200, "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n",
			noReply(200, "text/event-stream")},
		"empty 200":                {200, "application/json", "", noReply(200, "application/json")},
		"202 for a request":        {202, "", "", noReply(202, "-")},
		"truncated json":           {200, "application/json", `{"jsonrpc":"2.0","id":7,"res`, noReply(200, "application/json")},
		"reply for another id":     {200, "application/json", `{"jsonrpc":"2.0","id":8,"result":{}}`, noReply(200, "application/json")},
		"null result":              {200, "application/json", `{"jsonrpc":"2.0","id":7,"result":null}`, noReply(200, "application/json")},
		"neither result nor error": {200, "application/json", `{"jsonrpc":"2.0","id":7}`, noReply(200, "application/json")},
		"html 200":                 {200, "text/html", "<html></html>", noReply(200, "text/html")},
		// HTTP errors without a JSON-RPC body are errors, not silence.
		"404 session not found": {404, "text/plain; charset=utf-8", "session not found\n", Outcome{Class: ClassError, Kind: "http 404, not JSON-RPC"}},
		"413 empty":             {413, "", "", Outcome{Class: ClassError, Kind: "http 413, not JSON-RPC"}},
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for name, tc := range classifyCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := Classify(tc.status, tc.ct, []byte(tc.body), "7"); got != tc.want {
				t.Errorf("Classify(%d, %q, %q) = %+v, want %+v", tc.status, tc.ct, tc.body, got, tc.want)
			}
		})
	}
}

func TestClassifyTransport(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err      error
		midReply bool
		want     string
	}{
		"refused":         {&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false, "transport: request: connection refused"},
		"reset mid-reply": {&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true, "transport: reply cut off: connection reset"},
		"cut off":         {fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true, "transport: reply cut off: unexpected EOF"},
		"client timeout":  {fmt.Errorf("do: %w", context.DeadlineExceeded), false, "transport: request: timeout"},
		"canceled":        {context.Canceled, false, "transport: request: canceled"},
		"something else":  {errors.New("tls: no"), false, "transport: request: other"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := ClassifyTransport(tc.err, tc.midReply)
			if diff := cmp.Diff(Outcome{Class: ClassTransport, Kind: tc.want}, got); diff != "" {
				t.Errorf("ClassifyTransport(%v) (-want +got):\n%s", tc.err, diff)
			}
		})
	}
}

func TestIsSessionGone(t *testing.T) {
	t.Parallel()
	tests := map[Outcome]bool{
		Classify(404, "text/plain", []byte("session not found"), "1"):                                                    true,
		Classify(502, "application/json", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`), "1"): false,
		{Class: ClassResult}: false,
	}
	for o, want := range tests {
		if got := isSessionGone(o); got != want {
			t.Errorf("isSessionGone(%+v) = %v, want %v", o, got, want)
		}
	}
}

// FuzzClassify: any reply is classified without panicking, a result has no
// kind and everything else has one.
func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases() {
		f.Add(tc.status, tc.ct, []byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, status int, ct string, body []byte) {
		o := Classify(status, ct, body, "7")
		if (o.Class == ClassResult) != (o.Kind == "") {
			t.Errorf("Classify = %+v: a kind must be set exactly when it is not a result", o)
		}
		if o.Class < ClassResult || o.Class > ClassNoReply {
			t.Errorf("Classify = %+v: unknown class", o)
		}
	})
}
