package sidecar_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

const (
	// modernVersion is the protocol version of the modern era.
	modernVersion   = "2026-07-28"
	modernMeta      = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	modernDiscover  = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`
	modernSkillList = `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{` + modernMeta + `}}`
)

var modernHeaders = func(method string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
}

// startEraSidecar starts the sidecar (sidecartest.Start) in front of h
// with the example plugin, no auth gate and era-bridge eraBridge, and waits
// until it has learned the eras wantEras of the upstream.
func startEraSidecar(t *testing.T, h *httptest.Server, wantEras, eraBridge string) (mcpURL string, reg *prometheus.Registry) {
	t.Helper()
	s := sidecartest.Start(t, h.URL+"/mcp", sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate = "none"
		c.EraBridge = eraBridge
	}})
	sidecartest.WaitFor(t, time.Minute, func() bool { e := s.Eras.Current(); return e.Known && e.Label() == wantEras },
		"the sidecar to learn the upstream's eras "+wantEras)
	return s.URL, s.Registry
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
		// Pinned off: this test's subject is the sidecar without the bridge.
		u, reg := startEraSidecar(t, sidecartest.Upstream(t, demo.Handler(nil)), "legacy", "off")
		_, _, body := sidecartest.Call(t, u, modernDiscover, modernHeaders("server/discover"))
		if strings.Contains(body, "io.modelcontextprotocol/skills") {
			t.Errorf("legacy-only upstream's server/discover got the declaration: %s", body)
		}
		_, _, body = sidecartest.Call(t, u, modernSkillList, modernHeaders("skills/list"))
		if !strings.Contains(body, `"error"`) || strings.Contains(body, `"skills":`) {
			t.Errorf("modern skills/list in front of a legacy-only upstream: %s, want the upstream's own refusal", body)
		}
		_, _, body = sidecartest.Call(t, u, sidecartest.Initialize, nil)
		if !strings.Contains(body, "io.modelcontextprotocol/skills") {
			t.Errorf("initialize lacks the declaration: %s", body)
		}
		if v, ok := metricstest.Sample(metricstest.Gather(t, reg), "skills_sidecar_upstream_era", map[string]string{"era": "legacy"}); !ok || v != 1 {
			t.Errorf("upstream_era{era=legacy} = %v (%v), want 1", v, ok)
		}
	})
	t.Run("dual", func(t *testing.T) {
		t.Parallel()
		u, _ := startEraSidecar(t, sidecartest.Upstream(t, demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true})), "dual", "off")
		_, _, body := sidecartest.Call(t, u, modernDiscover, modernHeaders("server/discover"))
		if !strings.Contains(body, "io.modelcontextprotocol/skills") {
			t.Errorf("dual upstream's server/discover lacks the declaration: %s", body)
		}
		_, _, body = sidecartest.Call(t, u, modernSkillList, modernHeaders("skills/list"))
		if !strings.Contains(body, `"skills"`) || strings.Contains(body, `"error"`) {
			t.Errorf("modern skills/list in front of a dual upstream: %s", body)
		}
	})
}

// TestBridgeModernClientLegacyUpstream: with era-bridge auto in front of a
// legacy-only go-sdk upstream, a go-sdk v1.8.0 client negotiates
// 2026-07-28 through the sidecar (the bridge's server/discover names it),
// sees the declaration, and lists and calls the upstream's tools over the
// legacy session the bridge holds; a legacy initialize still passes
// through; subscriptions/listen is acknowledged with its subscription id.
func TestBridgeModernClientLegacyUpstream(t *testing.T) {
	t.Parallel()
	up := sidecartest.Upstream(t, demo.Handler(nil))
	u, reg := startEraSidecar(t, up, "legacy", "auto")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatalf("connect through the bridge: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("negotiated %q through the bridge, want 2026-07-28", v)
	}
	if _, ok := cs.InitializeResult().Capabilities.Extensions["io.modelcontextprotocol/skills"]; !ok {
		t.Errorf("no skills declaration through the bridge: %+v", cs.InitializeResult().Capabilities)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list through the bridge: %v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call add through the bridge: %+v, %v", res, err)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"sum":5`) {
		t.Errorf("add(2,3) = %s, want sum 5", b)
	}
	if v, _ := metricstest.Sample(metricstest.Gather(t, reg), "skills_sidecar_bridge_sessions", map[string]string{}); v < 1 {
		t.Errorf("bridge_sessions = %v, want at least 1: the calls did not go over a held session", v)
	}

	_, _, body := sidecartest.Call(t, u, sidecartest.Initialize, nil)
	if !strings.Contains(body, `"protocolVersion":"2025-11-25"`) || !strings.Contains(body, "io.modelcontextprotocol/skills") {
		t.Errorf("legacy initialize through the bridge: %s", body)
	}
	// A go-sdk client that asks for a legacy version gets it: the bridge
	// offers 2026-07-28 only to a client that asks for it (server/discover
	// with that version); this one sends initialize, which passes through.
	lc, err := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: u, MaxRetries: 1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("legacy go-sdk client through the bridge: %v", err)
	}
	if v := lc.InitializeResult().ProtocolVersion; v != "2025-11-25" || lc.ID() == "" {
		t.Errorf("a client asking for 2025-11-25 negotiated %q (session %q) through the bridge", v, lc.ID())
	}
	if tools, err := lc.ListTools(ctx, nil); err != nil || len(tools.Tools) == 0 {
		t.Errorf("legacy tools/list through the bridge: %v, %v", tools, err)
	}
	_ = lc.Close()

	var ack string
	select {
	case ev := <-openListen(t, ctx, u, `"sub-1"`, `{"toolsListChanged":true,"promptsListChanged":true}`):
		ack = ev.data
	case <-ctx.Done():
		t.Fatal("no first event on the listen stream")
	}
	if !strings.Contains(ack, `"method":"notifications/subscriptions/acknowledged"`) || !strings.Contains(ack, `"io.modelcontextprotocol/subscriptionId":"sub-1"`) {
		t.Errorf("first listen event: %q, want the acknowledgement with subscriptionId sub-1", ack)
	}
	// The demo declares tools.listChanged but no prompts: only the first
	// is honoured.
	if !strings.Contains(ack, `"toolsListChanged":true`) || strings.Contains(ack, "promptsListChanged") {
		t.Errorf("acknowledged filter: %q, want toolsListChanged only", ack)
	}
}
