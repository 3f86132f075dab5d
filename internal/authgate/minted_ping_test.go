package authgate_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestGateAsksTheUpstreamInAMintedSession: in a session the era bridge
// minted for a legacy client of a modern-only upstream, the gate's probe
// (ping, in the caller's session) is still the upstream's to answer, with
// the caller's credentials: a caller whose token the upstream no longer
// takes gets the upstream's refusal (401, WWW-Authenticate) for the
// sidecar's own methods, as for a forwarded call and a ping, however long
// the session's id is still good for.
func TestGateAsksTheUpstreamInAMintedSession(t *testing.T) {
	t.Parallel()
	k := &tokens{valid: map[string]bool{"kept": true, "revoked": true}}
	u := modernOnlySidecar(t, k)
	session := func(tok string) map[string]string {
		code, h, body := sidecartest.Call(t, u, sidecartest.Initialize, map[string]string{"Authorization": "Bearer " + tok})
		if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize with %s = %d %s, want a minted session", tok, code, body)
		}
		return map[string]string{"Authorization": "Bearer " + tok, "Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	}
	kept, revoked := session("kept"), session("revoked")
	k.set("revoked", false)
	for _, m := range []string{"tools/list", "ping", "skills/list", "agents/list"} {
		body := `{"jsonrpc":"2.0","id":7,"method":"` + m + `"}`
		code, h, got := sidecartest.Call(t, u, body, revoked)
		if !upstreamsRefusal(code, h) {
			t.Errorf("%s with a token the upstream no longer takes = %d (WWW-Authenticate %q) %s; want the upstream's 401", m, code, h.Get("WWW-Authenticate"), got)
		}
		if strings.Contains(got, "skill://") || strings.Contains(got, "billing-triage") {
			t.Errorf("%s with a token the upstream no longer takes leaked content: %s", m, got)
		}
		if code, _, got := sidecartest.Call(t, u, body, kept); code != http.StatusOK || !strings.Contains(got, `"result"`) {
			t.Errorf("%s with a token the upstream takes = %d %s, want a result", m, code, got)
		}
	}
}
