package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestLegacyFrontVersionHeader: as the legacy server of its sessions the
// front must answer a request whose MCP-Protocol-Version header names a
// version it does not support with 400 Bad Request (streamable HTTP
// transport, protocol version header). For each version, a POST the
// front answers itself (ping), one it translates (tools/list), a GET
// stream and a DELETE get the status a go-sdk legacy server gives the
// same request on a session of its own.
func TestLegacyFrontVersionHeader(t *testing.T) {
	direct := testupstream.Start(t, testupstream.Config{}).URL
	fx := newFrontFixture(t, 8)
	session := func(u string) string {
		resp, body := post(t, u, legacyInit, nil)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize at %s: HTTP %d %s, no session", u, resp.StatusCode, body)
		}
		post(t, u, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
		return sid
	}
	do := func(u, method, sid, version string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second) // hang guard
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, u, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", version)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Content-Type")
	}
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01", "2025-11-24"} {
		dsid, fsid := session(direct), session(fx.url)
		h := func(sid string) map[string]string {
			return map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": version}
		}
		for _, body := range []string{`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`} {
			want, wbody := post(t, direct, body, h(dsid))
			got, gbody := post(t, fx.url, body, h(fsid))
			if got.StatusCode != want.StatusCode {
				t.Errorf("%s with MCP-Protocol-Version %s: HTTP %d %s; go-sdk answers HTTP %d %s", body, version, got.StatusCode, gbody, want.StatusCode, wbody)
				continue
			}
			if want.StatusCode != http.StatusBadRequest {
				continue
			}
			var e struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(gbody), &e); err != nil || e.Error == nil || e.Error.Code != -32004 || string(e.ID) != body[len(`{"jsonrpc":"2.0","id":`):len(`{"jsonrpc":"2.0","id":`)+1] {
				t.Errorf("%s with MCP-Protocol-Version %s: body %s; want the caller's id and error -32004", body, version, gbody)
			}
		}
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			want, _ := do(direct, method, dsid, version)
			if got, ct := do(fx.url, method, fsid, version); got != want {
				t.Errorf("%s with MCP-Protocol-Version %s: HTTP %d (%s); go-sdk answers HTTP %d", method, version, got, ct, want)
			}
		}
	}
}
