package authgate_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
)

// TestGateAsksTheUpstreamOverAHeldSession: a 2026-07-28 caller of a
// legacy-only upstream is served over a legacy session the era bridge
// holds for its credentials, and the gate's probe of such a caller
// (server/discover) is still the upstream's to answer with the caller's
// credentials: once the upstream no longer takes the caller's token, the
// caller gets the upstream's refusal (401, WWW-Authenticate) for the
// sidecar's own methods and for server/discover, as for a forwarded call,
// however long the session it was served on is held. The upstream is
// go-sdk's bearer-token middleware in front of the demo's legacy go-sdk
// server; it passes requests without credentials (the sidecar's era
// probes carry none).
func TestGateAsksTheUpstreamOverAHeldSession(t *testing.T) {
	t.Parallel()
	k := &tokens{valid: map[string]bool{"kept": true, "revoked": true}}
	u := gatedSidecar(t, k, demo.Handler(nil), "legacy")

	kept, revoked := http.Header{"Authorization": {"Bearer kept"}}, http.Header{"Authorization": {"Bearer revoked"}}
	for _, h := range []http.Header{kept, revoked} {
		// A forwarded call opens the caller's held session; the gate is
		// not asked (no admission is cached).
		if resp, body := do(t, u, call{"tools/list", `{}`}, true, h); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"tools"`) {
			t.Fatalf("tools/list with %s = %d %s, want the tools", h.Get("Authorization"), resp.StatusCode, body)
		}
	}
	k.set("revoked", false)
	for _, m := range []string{"tools/list", "server/discover", "skills/list", "agents/list"} {
		resp, body := do(t, u, call{m, `{}`}, true, revoked)
		if !upstreamsRefusal(resp.StatusCode, resp.Header) {
			t.Errorf("%s with a token the upstream no longer takes = %d (WWW-Authenticate %q) %s; want the upstream's 401", m, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		if strings.Contains(body, "skill://") || strings.Contains(body, "billing-triage") {
			t.Errorf("%s with a token the upstream no longer takes leaked content: %s", m, body)
		}
		if resp, body := do(t, u, call{m, `{}`}, true, kept); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Errorf("%s with a token the upstream takes = %d %s, want a result", m, resp.StatusCode, body)
		}
	}
}
