package authgate_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// tokens are the bearer tokens an upstream takes, changed as a test goes.
type tokens struct {
	mu    sync.Mutex
	valid map[string]bool
}

func (k *tokens) set(tok string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.valid[tok] = ok
}

// modernOnlySidecar starts the sidecar with the gate on in front of a
// modern-only go-sdk server (internal/modernonly) behind go-sdk's
// bearer-token middleware taking the tokens of k (gatedSidecar).
func modernOnlySidecar(t *testing.T, k *tokens) string {
	t.Helper()
	return gatedSidecar(t, k, modernonly.Handler(modernonly.NewServer()), "modern")
}

// gatedSidecar starts the sidecar with the gate on (the era bridge at
// auto) in front of mcpServer behind go-sdk's bearer-token middleware
// taking the tokens of k, and returns its URL once it knows the upstream
// speaks era only ("legacy", "modern"). The middleware passes requests
// without credentials: the sidecar's era probes carry none.
func gatedSidecar(t *testing.T, k *tokens, mcpServer http.Handler, era string) string {
	t.Helper()
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.valid[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	guarded := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: "https://example.test/.well-known/oauth-protected-resource"})(mcpServer)
	up := sidecartest.Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			mcpServer.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	}))
	s := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.EraBridge = "upstream", "off", "auto"
	}})
	sidecartest.WaitFor(t, time.Minute, func() bool { e := s.Eras.Current(); return e.Known && e.Label() == era },
		"the sidecar to learn the upstream is "+era+"-only")
	return s.URL
}

// upstreamsRefusal reports whether a reply is the middleware's refusal
// passed on: 401 with its WWW-Authenticate.
func upstreamsRefusal(code int, h http.Header) bool {
	return code == http.StatusUnauthorized && strings.Contains(h.Get("WWW-Authenticate"), "resource_metadata")
}

// TestLegacyInitializeRefusedAsTheUpstreamRefuses: a legacy client's
// initialize, which the era bridge answers from the upstream's
// server/discover asked with the client's credentials, gets the
// upstream's refusal of that request (401, WWW-Authenticate: the
// authorization spec's start of an OAuth flow) and no session.
func TestLegacyInitializeRefusedAsTheUpstreamRefuses(t *testing.T) {
	t.Parallel()
	u := modernOnlySidecar(t, &tokens{valid: map[string]bool{"good": true}})
	code, h, got := sidecartest.Call(t, u, sidecartest.Initialize, map[string]string{"Authorization": "Bearer bad"})
	if !upstreamsRefusal(code, h) || h.Get("Mcp-Session-Id") != "" || !strings.Contains(got, `"id":1`) {
		t.Errorf("initialize with a token the upstream does not take = %d (WWW-Authenticate %q, session %q) %s; want the upstream's 401 with the client's id and no session",
			code, h.Get("WWW-Authenticate"), h.Get("Mcp-Session-Id"), got)
	}
	if code, h, got := sidecartest.Call(t, u, sidecartest.Initialize, map[string]string{"Authorization": "Bearer good"}); code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize with a token the upstream takes = %d %s, want a session", code, got)
	}
}
