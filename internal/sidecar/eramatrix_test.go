package sidecar_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestEraMatrix is the era client matrix: a go-sdk v1.8.0 client
// asking for each era, through the sidecar at its default (era-bridge
// auto), in front of an upstream of each era (legacy-only, modern-only,
// dual), gets the era it asked for and works: the upstream's tools and a
// tool call, the upstream's resource, and a skill file the sidecar serves.
func TestEraMatrix(t *testing.T) {
	t.Parallel()
	upstreams := []struct {
		name, eras string
		h          http.Handler
		echoArgs   map[string]any
		echoed     string
		readme     string
	}{
		{"legacy-only", "legacy", demo.Handler(nil), map[string]any{"text": "a&b"}, "a&b", demo.ReadmeText},
		{"modern-only", "modern", modernonly.Handler(modernonly.NewServer()), map[string]any{"message": "a&b"}, "Echo: a&b", modernonly.ReadmeText},
		{"dual", "dual", demo.BothEras(), map[string]any{"text": "a&b"}, "a&b", demo.ReadmeText},
	}
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			t.Parallel()
			u, _ := startEraSidecar(t, sidecartest.Upstream(t, up.h), up.eras, "auto")
			for _, version := range []string{"2025-11-25", "2026-07-28"} {
				t.Run(version, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					c := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "1"}, nil)
					cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, MaxRetries: 1},
						&mcp.ClientSessionOptions{ProtocolVersion: version})
					if err != nil {
						t.Fatalf("connect: %v", err)
					}
					defer cs.Close()
					if got := cs.InitializeResult().ProtocolVersion; got != version {
						t.Errorf("negotiated %q, want the %q asked for", got, version)
					}
					tools, err := cs.ListTools(ctx, nil)
					if err != nil || !hasTool(tools, "echo") {
						t.Fatalf("tools/list: %+v, %v; want the upstream's echo", tools, err)
					}
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: up.echoArgs})
					if err != nil || res.IsError || len(res.Content) != 1 {
						t.Fatalf("tools/call echo: %+v, %v", res, err)
					}
					if txt, ok := res.Content[0].(*mcp.TextContent); !ok || txt.Text != up.echoed {
						t.Errorf("echo = %+v, want %q", res.Content[0], up.echoed)
					}
					read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://readme"})
					if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != up.readme {
						t.Errorf("resources/read demo://readme: %+v, %v; want the upstream's text", read, err)
					}
					skill, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://incident-summary/SKILL.md"})
					if err != nil || len(skill.Contents) != 1 || !strings.Contains(skill.Contents[0].Text, "name: incident-summary") {
						t.Errorf("resources/read of the sidecar's skill file: %+v, %v", skill, err)
					}
				})
			}
		})
	}
}

func hasTool(l *mcp.ListToolsResult, name string) bool {
	if l == nil {
		return false
	}
	for _, tool := range l.Tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}
