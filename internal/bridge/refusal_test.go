package bridge

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestSessionRefusalPassedOn: an upstream that refuses the held session's
// initialize has its status and WWW-Authenticate reach the modern client
// whatever the body: an OAuth resource server's JSON ({"error":
// "invalid_token"}) as sent, and a JSON-RPC error with the caller's id in
// place of the bridge's own (found in review: a JSON body at 401 became a
// 502 bridge_session_failed, so the client never started its auth flow).
func TestSessionRefusalPassedOn(t *testing.T) {
	const challenge = `Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"`
	for _, c := range []struct {
		name   string
		status int
		body   string
		wantID string // "" when the body is not JSON-RPC and passes as is
	}{
		{"OAuth JSON at 401", http.StatusUnauthorized, `{"error":"invalid_token","error_description":"missing token"}`, ""},
		{"JSON-RPC error at 403", http.StatusForbidden, `{"jsonrpc":"2.0","id":"skills-sidecar-bridge","error":{"code":-32001,"message":"scope missing"}}`, "1"},
		{"text at 401", http.StatusUnauthorized, "unauthorized\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", challenge)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			})
			bt, u := newBridge(t, h, 4)
			code, body := call(t, bt, u, "", "{}", "tools/list")
			if code != c.status {
				t.Fatalf("upstream %d: client got %d %s", c.status, code, body)
			}
			if c.wantID == "" {
				if body != c.body {
					t.Errorf("body %q, want the upstream's %q as sent", body, c.body)
				}
				return
			}
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil || string(m.ID) != c.wantID || m.Error.Code != -32001 {
				t.Errorf("body %s: want the upstream's -32001 with the caller's id %s", body, c.wantID)
			}
		})
	}
}
