package verify

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// upstreamModes are the ways a go-sdk server runs behind the sidecar.
func upstreamModes() map[string]struct {
	opts      mcp.StreamableHTTPOptions
	stateless bool
} {
	return map[string]struct {
		opts      mcp.StreamableHTTPOptions
		stateless bool
	}{
		"stateful-sse":   {},
		"stateful-json":  {opts: mcp.StreamableHTTPOptions{JSONResponse: true}},
		"stateless-2026": {opts: mcp.StreamableHTTPOptions{Stateless: true}, stateless: true},
		"stateless-json": {opts: mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, stateless: true},
	}
}

// newSidecar starts the sidecar as the binary assembles it (example
// plugin, no auth gate, page size 2 so every listing paginates) in front
// of the demo upstream, and returns its MCP URL.
func newSidecar(t *testing.T, opts mcp.StreamableHTTPOptions) string {
	t.Helper()
	up := httptest.NewServer(demo.Handler(&opts))
	t.Cleanup(up.Close)
	return sidecartest.Start(t, up.URL, sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		// era-bridge off: a bridged stateful upstream is dual-era, which
		// issue 20's own tests judge; these judge each upstream mode as is.
		c.AuthGate, c.UpstreamFiles, c.PageSize, c.EraBridge = "none", "auto", 2, "off"
	}}).URL
}

func TestSidecarEveryUpstreamMode(t *testing.T) {
	t.Parallel()
	for name, mode := range upstreamModes() {
		eras := []string{EraAuto, EraLegacy}
		if mode.stateless {
			eras = append(eras, EraModern)
		}
		for _, era := range eras {
			t.Run(name+"/"+era, func(t *testing.T) {
				t.Parallel()
				endpoint := newSidecar(t, mode.opts)
				ctx, cancel := context.WithTimeout(context.Background(), 30*1e9)
				defer cancel()
				rep := Verify(ctx, Options{URL: endpoint, Era: era})
				if rep.ExitCode != ExitOK || len(rep.Skills) == 0 || len(rep.Agents) == 0 {
					t.Errorf("Verify(sidecar, %s) exit %d, %d skills, %d agents, want 0 with skills and agents:\n%s",
						era, rep.ExitCode, len(rep.Skills), len(rep.Agents), textOf(t, rep))
				}
				wantEra := era
				if era == EraAuto {
					wantEra = EraLegacy
					if mode.stateless {
						wantEra = EraModern
					}
				}
				if rep.Era != wantEra {
					t.Errorf("Verify(sidecar, %s).Era = %q, want %q", era, rep.Era, wantEra)
				}
			})
		}
	}
}

func textOf(t *testing.T, rep *Report) string {
	t.Helper()
	var b strings.Builder
	if err := rep.writeText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
