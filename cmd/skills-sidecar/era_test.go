package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
)

const (
	modernMeta      = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	modernDiscover  = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`
	modernSkillList = `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{` + modernMeta + `}}`
)

var modernHeaders = func(method string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
}

// startEraSidecar runs the sidecar in front of h with extra args, with a
// metrics listener, and waits until /readyz names the eras it learned.
func startEraSidecar(t *testing.T, h *httptest.Server, wantEras string, args ...string) (mcpURL, maddr string) {
	t.Helper()
	addr, maddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--listen", addr, "--metrics-listen", maddr, "--annotations-file", "",
			"--upstream", h.URL + "/mcp", "--plugin-dir", "../../examples/plugin", "--auth-gate", "none"}, args...), nil, nil, &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("run = %d; stderr %s", code, errOut.String())
		}
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, body := readyzBody(t, maddr); strings.Contains(body, "upstream eras: "+wantEras+" ") {
			break
		}
		if time.Now().After(deadline) {
			_, body := readyzBody(t, maddr)
			t.Fatalf("/readyz never named eras %q: %q; stderr %s", wantEras, body, errOut.String())
		}
	}
	return "http://" + addr + "/mcp", maddr
}

func upstreamServer(t *testing.T, h interface {
	ServeHTTP(w http.ResponseWriter, r *http.Request)
}) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestNoBridgeDeclaresOnlyUpstreamEras: with era-bridge off, in front of a
// legacy-only go-sdk upstream the sidecar declares nothing in the
// upstream's server/discover (which lists legacy versions only) and leaves
// modern skills/list to the upstream, which refuses it as it refuses the
// rest of that wire (go-sdk: -32601 here, -32022 for its own methods); initialize still carries the declaration.
// In front of a dual-era upstream both eras are declared and answered.
func TestNoBridgeDeclaresOnlyUpstreamEras(t *testing.T) {
	t.Parallel()
	t.Run("legacy", func(t *testing.T) {
		t.Parallel()
		u, maddr := startEraSidecar(t, upstreamServer(t, demo.Handler(nil)), "legacy", "--era-bridge", "off")
		_, _, body := mcpPost(t, u, modernDiscover, modernHeaders("server/discover"))
		if strings.Contains(body, "io.modelcontextprotocol/skills") {
			t.Errorf("legacy-only upstream's server/discover got the declaration: %s", body)
		}
		_, _, body = mcpPost(t, u, modernSkillList, modernHeaders("skills/list"))
		if !strings.Contains(body, `"error"`) || strings.Contains(body, `"skills":`) {
			t.Errorf("modern skills/list in front of a legacy-only upstream: %s, want the upstream's own refusal", body)
		}
		_, _, body = mcpPost(t, u, initBody, nil)
		if !strings.Contains(body, "io.modelcontextprotocol/skills") {
			t.Errorf("initialize lacks the declaration: %s", body)
		}
		if v, ok := sample(scrape(t, maddr), "skills_sidecar_upstream_era", map[string]string{"era": "legacy"}); !ok || v != 1 {
			t.Errorf("upstream_era{era=legacy} = %v (%v), want 1", v, ok)
		}
	})
	t.Run("dual", func(t *testing.T) {
		t.Parallel()
		u, _ := startEraSidecar(t, upstreamServer(t, demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true})), "dual", "--era-bridge", "off")
		_, _, body := mcpPost(t, u, modernDiscover, modernHeaders("server/discover"))
		if !strings.Contains(body, "io.modelcontextprotocol/skills") {
			t.Errorf("dual upstream's server/discover lacks the declaration: %s", body)
		}
		_, _, body = mcpPost(t, u, modernSkillList, modernHeaders("skills/list"))
		if !strings.Contains(body, `"skills"`) || strings.Contains(body, `"error"`) {
			t.Errorf("modern skills/list in front of a dual upstream: %s", body)
		}
	})
}
