// Package examples embeds the example plugin that the sidecar serves when no
// plugin folder is configured (the demo) and that tests load: two skills
// (skills/acme/billing/refunds, nested three levels deep with examples/,
// scripts/ and a PNG under assets/, and skills/incident-summary), two agents
// and .claude-plugin/plugin.json. It owns those files and nothing else.
package examples

import (
	"embed"
	"io/fs"
)

//go:embed all:plugin
var pluginFiles embed.FS

// Plugin returns the example plugin as a read-only file system rooted at the
// plugin folder (it holds .claude-plugin/, skills/ and agents/).
func Plugin() fs.FS {
	sub, err := fs.Sub(pluginFiles, "plugin")
	if err != nil {
		panic("examples: embedded plugin folder missing: " + err.Error()) // impossible: checked at build time by go:embed
	}
	return sub
}
