package upstreamfiles_test

import (
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestNoCatalogForwardsSkillURIs: a sidecar with no skills claims no
// skill:// URI, so an upstream that serves skill resources of its own is
// read through the sidecar as if the sidecar were not there.
func TestNoCatalogForwardsSkillURIs(t *testing.T) {
	t.Parallel()
	up := testupstream.Start(t, testupstream.Config{Stateless: true, Files: map[string]string{"skill://own/SKILL.md": "---\nname: own\ndescription: d\n---\n"}})
	for _, snap := range []func() *catalog.Snapshot{nil, func() *catalog.Snapshot { return nil }} {
		side := sidecartest.Start(t, up.URL, sidecartest.Options{Snapshot: snap})
		got := readBytes(t, side.URL, "skill://own/SKILL.md")
		if !strings.Contains(string(got), "name: own") {
			t.Errorf("resources/read of the upstream's own skill through a sidecar without skills = %q", got)
		}
	}
}
