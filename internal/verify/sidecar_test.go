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
	s := sidecartest.Start(t, up.URL, sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate, c.UpstreamFiles, c.PageSize = "none", "auto", 2
	}})
	s.WaitEras(t)
	return s.URL
}

func TestSidecarEveryUpstreamMode(t *testing.T) {
	t.Parallel()
	for name, mode := range upstreamModes() {
		// Every mode in every era: the era bridge (auto, the default)
		// serves 2026-07-28 in front of the stateful, legacy-only modes.
		eras := []string{EraAuto, EraLegacy, EraModern}
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
					// The sidecar is dual-era in front of every mode, and
					// auto prefers 2026-07-28 where it is offered.
					wantEra = EraModern
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
