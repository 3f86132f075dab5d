package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
)

// TestSessionRefusalPassedOn: an upstream that refuses the held session's
// initialize has its status and WWW-Authenticate reach the modern client
// whatever the body (found in review: a JSON body at 401 became a 502
// bridge_session_failed, so the client never started its auth flow), as
// an *onbehalf.Refusal the proxy passes on like the gate's: a JSON-RPC
// error with the caller's id, the upstream's error object kept when its
// body is one.
func TestSessionRefusalPassedOn(t *testing.T) {
	const challenge = `Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"`
	for _, c := range []struct {
		name   string
		status int
		body   string
		code   int // the JSON-RPC error's code
	}{
		{"OAuth JSON at 401", http.StatusUnauthorized, `{"error":"invalid_token","error_description":"missing token"}`, -32603},
		{"JSON-RPC error at 403", http.StatusForbidden, `{"jsonrpc":"2.0","id":"skills-sidecar-bridge","error":{"code":-32001,"message":"scope missing"}}`, -32001},
		{"text at 401", http.StatusUnauthorized, "unauthorized\n", -32603},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", challenge)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			})
			bt, u := newBridge(t, h, 4)
			req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+fmt.Sprintf(testMeta, "{}")+`}}`))
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/list")
			_, err := bt.RoundTrip(req)
			var ref *onbehalf.Refusal
			if !errors.As(err, &ref) || ref.Status != c.status || ref.Header.Get("Www-Authenticate") != challenge {
				t.Fatalf("upstream %d: RoundTrip's error %v, want the upstream's refusal with its WWW-Authenticate", c.status, err)
			}
			code, body := call(t, bt, u, "", "{}", "tools/list")
			if code != c.status {
				t.Fatalf("upstream %d: client got %d %s", c.status, code, body)
			}
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil || string(m.ID) != "1" || m.Error.Code != c.code {
				t.Errorf("body %s: want %d with the caller's id 1", body, c.code)
			}
		})
	}
}

// TestSessionInitializeOnlyItsAnswer: a reply to the held session's
// initialize that carries another id (the fixed id the bridge once sent,
// a stray answer) opens no session: the caller gets 502
// bridge_session_failed, and the session's initialize carried a fresh id
// of its own.
func TestSessionInitializeOnlyItsAnswer(t *testing.T) {
	var sent atomic.Value
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"initialize"`) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		sent.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":"skills-sidecar-bridge","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"up","version":"1"}}}`)
	})
	bt, u := newBridge(t, h, 4)
	code, body := call(t, bt, u, "", "{}", "tools/list")
	if code != http.StatusBadGateway || !strings.Contains(body, "bridge_session_failed") {
		t.Errorf("client got %d %s, want 502 bridge_session_failed", code, body)
	}
	if s, _ := sent.Load().(string); !strings.Contains(s, `"id":"skills-sidecar/session/`) {
		t.Errorf("the initialize sent %s, want a fresh id of onbehalf's", s)
	}
}
