package upstreamfiles_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
)

// Frontmatter portability of the SKILL.md the upstream serves itself
// (docs/frontmatter.md): the plugin folder's copy quotes the value, so the
// catalog publishes it, but the served bytes carry the plain `yes` that
// YAML 1.1 hosts read as a boolean. The served bytes are what a host
// parses, so they are what is judged.
const (
	quotedNotes = "---\nname: notes\ndescription: Take notes.\nmetadata:\n  beta: \"yes\"\n---\n# Notes\n"
	plainNotes  = "---\nname: notes\ndescription: Take notes.\nmetadata:\n  beta: yes\n---\n# Notes\n"
)

// TestServedFrontmatterPortability: with skip (the default) a skill whose
// served SKILL.md is ambiguous is in neither skills/list nor skills/get;
// with warn it is, with the YAML 1.2 reading of the served bytes. Both ways
// the overlay learns the bytes: its own read of a new context's file, and a
// forwarded read that shows the upstream's bytes changed.
func TestServedFrontmatterPortability(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"skip", "warn"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{"overlay read", "forwarded read"} {
				t.Run(path, func(t *testing.T) {
					t.Parallel()
					var text atomic.Value
					text.Store(plainNotes)
					if path == "forwarded read" {
						text.Store(quotedNotes)
					}
					e := overlayRig(t, &text, overlayConfig{skillMD: quotedNotes, portability: mode})
					if path == "forwarded read" {
						// Listed while the served copy is quoted; then the
						// upstream's bytes change and a read through the
						// sidecar is all that shows it.
						if _, ok := skillsOf(t, modernCall(t, e.url, "skills/list", nil))[notesURI]; !ok {
							t.Fatalf("skills/list before the change leaves out %s, whose served copy is quoted", notesURI)
						}
						text.Store(plainNotes)
						if got := string(readBytes(t, e.url, notesURI)); got != plainNotes {
							t.Fatalf("resources/read %s = %q, want the upstream's bytes %q", notesURI, got, plainNotes)
						}
					}
					listed, inList := skillsOf(t, modernCall(t, e.url, "skills/list", nil))[notesURI]
					got, getErr := callAs(e.url, nil, "skills/get", map[string]any{"uri": notesURI})
					switch mode {
					case "skip":
						if inList {
							t.Errorf("skills/list publishes %s with frontmatter %s; its served SKILL.md has a plain yes, want it left out", notesURI, listed.Frontmatter)
						}
						if getErr == nil || !strings.Contains(getErr.Error(), "-32602") || !strings.Contains(getErr.Error(), "metadata.beta") {
							t.Errorf("skills/get %s = %s, %v; want a -32602 error naming metadata.beta", notesURI, got, getErr)
						}
					case "warn":
						if !inList {
							t.Fatalf("skills/list leaves out %s under warn", notesURI)
						}
						if want := `{"name":"notes","description":"Take notes.","metadata":{"beta":"yes"}}`; string(listed.Frontmatter) != want {
							t.Errorf("skills/list frontmatter = %s, want the served bytes' YAML 1.2 reading %s", listed.Frontmatter, want)
						}
						var g struct {
							Skill entry `json:"skill"`
						}
						if getErr != nil || json.Unmarshal(got, &g) != nil || g.Skill.URI != notesURI {
							t.Errorf("skills/get %s = %s, %v; want the entry", notesURI, got, getErr)
						}
					}
				})
			}
		})
	}
}
