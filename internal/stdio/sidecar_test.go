package stdio_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/stdioserver"
)

// startStdioSidecar runs the sidecar, as the binary assembles it, in front
// of this test binary run as the stdio test server in mode.
func startStdioSidecar(t *testing.T, mode string, set ...func(*config.Config)) *sidecartest.Sidecar {
	t.Helper()
	cmd, env, err := stdioserver.Command(mode)
	if err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal(cmd)
	s := sidecartest.Start(t, "", sidecartest.Options{
		Config: func(c *config.Config) {
			c.UpstreamCommand = string(argv)
			c.AuthGate = "none"
			for _, f := range set {
				f(c)
			}
		},
		Plugin:  examples.Plugin(),
		Environ: env,
	})
	s.WaitEras(t)
	return s
}

// TestGoSDKThroughSidecar: a go-sdk client of each era reaches a go-sdk
// stdio server through the sidecar, tools and the sidecar's own skills both.
func TestGoSDKThroughSidecar(t *testing.T) {
	t.Parallel()
	s := startStdioSidecar(t, "gosdk")
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ServerInfo.Name; got != "gosdk-stdio" {
				t.Errorf("server name = %q, want gosdk-stdio", got)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through " + version}})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != "through "+version {
				t.Errorf("echo = %q", got)
			}
			raw, _ := json.Marshal(cs.InitializeResult().Capabilities)
			if !strings.Contains(string(raw), "io.modelcontextprotocol/skills") {
				t.Errorf("capabilities %s lack the skills extension the sidecar declares", raw)
			}
		})
	}
}
