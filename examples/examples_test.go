package examples_test

import (
	"io/fs"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/examples"
)

// TestPluginLayout: the embed keeps dot-folders ("all:") and the plugin's
// shape; the catalog tests check the content.
func TestPluginLayout(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		".claude-plugin/plugin.json",
		"skills/acme/billing/refunds/SKILL.md",
		"skills/acme/billing/refunds/examples/partial-refund.md",
		"skills/acme/billing/refunds/assets/refund-flow.png",
		"skills/incident-summary/SKILL.md",
		"agents/billing-triage.md",
		"agents/incident-scribe.md",
	} {
		if _, err := fs.Stat(examples.Plugin(), name); err != nil {
			t.Errorf("example plugin lacks %s: %v", name, err)
		}
	}
	png, err := fs.ReadFile(examples.Plugin(), "skills/acme/billing/refunds/assets/refund-flow.png")
	if err != nil || len(png) < 8 || string(png[:8]) != "\x89PNG\r\n\x1a\n" {
		t.Errorf("refund-flow.png is not a PNG (err %v)", err)
	}
}
