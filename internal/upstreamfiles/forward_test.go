package upstreamfiles_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestNoCatalogForwardsSkillURIs: a sidecar with no skills claims no
// skill:// URI, so an upstream that serves skill resources of its own is
// read through the sidecar as if the sidecar were not there.
func TestNoCatalogForwardsSkillURIs(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "own-skills", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "skill://own/SKILL.md", Name: "own"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: "---\nname: own\ndescription: d\n---\n"}}}, nil
	})
	up := testupstream.Serve(t, s, &mcp.StreamableHTTPOptions{Stateless: true})
	for _, snap := range []func() *catalog.Snapshot{nil, func() *catalog.Snapshot { return nil }} {
		side := sidecartest.Start(t, up.URL, sidecartest.Options{Snapshot: snap})
		got := readBytes(t, side.URL, "skill://own/SKILL.md")
		if !strings.Contains(string(got), "name: own") {
			t.Errorf("resources/read of the upstream's own skill through a sidecar without skills = %q", got)
		}
	}
}
