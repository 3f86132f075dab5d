package authgate_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
)

// refusing answers the JSON-RPC methods in refuse, when they come with an
// Authorization (a caller's), with status and body, WWW-Authenticate set,
// and passes everything else to h.
func refusing(h http.Handler, status int, body string, refuse ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(b, &m)
		for _, name := range refuse {
			// Only the caller is refused: the sidecar's era probes carry no
			// credentials, and an upstream that refused them would be
			// learned as another era, deciding the test by a race.
			if m.Method == name && r.Header.Get("Authorization") != "" {
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, body)
				return
			}
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		h.ServeHTTP(w, r)
	})
}

// TestRefusalCarriesTheCallersID: when the upstream refuses a request the
// sidecar made for the caller (the gate's probe, agents/get's tools/list,
// the upstream-files overlay's reads) with a body carrying an id of its
// own, the caller gets the upstream's status and WWW-Authenticate, and a
// JSON-RPC error with its own id: the upstream's error
// object when it sent one, else one saying what the upstream answered.
func TestRefusalCarriesTheCallersID(t *testing.T) {
	t.Parallel()
	const foreign = `{"jsonrpc":"2.0","id":"someone-else","error":{"code":-32001,"message":"scope missing"}}`
	for _, tt := range []struct {
		name     string
		refuse   []string
		gateOff  bool
		overlay  bool
		call     call
		body     string
		wantCode int
	}{
		{"gate probe, JSON-RPC body", []string{"server/discover"}, false, false, call{"skills/list", `{}`}, foreign, -32001},
		{"gate probe, text body", []string{"server/discover"}, false, false, call{"skills/list", `{}`}, "forbidden\n", -32603},
		{"tools/list for agents/get", []string{"tools/list"}, true, false, call{"agents/get", `{"name":"billing-triage"}`}, foreign, -32001},
		{"overlay listing for skills/list", []string{"resources/list"}, true, true, call{"skills/list", `{}`}, foreign, -32001},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := refusing(demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true}), http.StatusForbidden, tt.body, tt.refuse...)
			u, _ := sidecar(t, up, sidecarOptions{gateOff: tt.gateOff, overlay: tt.overlay})
			resp, body := do(t, u, tt.call, true, http.Header{"Authorization": {"Bearer caller"}})
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != `Bearer error="insufficient_scope"` {
				t.Errorf("%s = %d (WWW-Authenticate %q), want the upstream's 403 and WWW-Authenticate", tt.call.method, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			var e struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.JSONRPC != "2.0" || e.Error == nil {
				t.Fatalf("%s reply = %s (%v), want a JSON-RPC error", tt.call.method, body, err)
			}
			if string(e.ID) != "1" {
				t.Errorf("%s reply id = %s, want the caller's 1 (reply %s)", tt.call.method, e.ID, body)
			}
			if e.Error.Code != tt.wantCode {
				t.Errorf("%s error code = %d, want %d (reply %s)", tt.call.method, e.Error.Code, tt.wantCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s Content-Type = %q, want application/json", tt.call.method, ct)
			}
		})
	}
}
