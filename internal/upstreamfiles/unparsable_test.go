package upstreamfiles_test

import (
	"strings"
	"sync/atomic"
	"testing"
)

// brokenNotes is a SKILL.md whose frontmatter no YAML parser accepts (a
// flow sequence that is never closed).
const brokenNotes = "---\nname: notes\ndescription: [Take notes.\n---\n# Notes\n"

// TestServedFrontmatterUnparsable: a SKILL.md the upstream serves whose
// frontmatter does not parse withholds its skill, as the catalog skips
// such a skill of its own, and nothing more: skills/list still answers
// (without it), skills/get names the reason, and a read of the file
// relays the upstream's bytes. Both ways the overlay learns the bytes are
// covered: its own read, and a forwarded read that shows they changed.
func TestServedFrontmatterUnparsable(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"overlay read", "forwarded read"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			var text atomic.Value
			text.Store(brokenNotes)
			if path == "forwarded read" {
				text.Store(quotedNotes)
			}
			e := overlayRig(t, &text, overlayConfig{skillMD: quotedNotes})
			if path == "forwarded read" {
				if _, ok := skillsOf(t, modernCall(t, e.url, "skills/list", nil))[notesURI]; !ok {
					t.Fatalf("skills/list before the change leaves out %s, whose served copy parses", notesURI)
				}
				text.Store(brokenNotes)
			}
			if got := string(readBytes(t, e.url, notesURI)); got != brokenNotes {
				t.Fatalf("resources/read %s = %q, want the upstream's bytes %q", notesURI, got, brokenNotes)
			}
			res, err := callAs(e.url, nil, "skills/list", nil)
			if err != nil {
				t.Fatalf("skills/list with an unparsable served SKILL.md: %v; want the page without that skill", err)
			}
			if listed, ok := skillsOf(t, res)[notesURI]; ok {
				t.Errorf("skills/list publishes %s with frontmatter %s; its served SKILL.md does not parse", notesURI, listed.Frontmatter)
			}
			got, getErr := callAs(e.url, nil, "skills/get", map[string]any{"uri": notesURI})
			if getErr == nil || !strings.Contains(getErr.Error(), "-32602") || !strings.Contains(getErr.Error(), "not published") {
				t.Errorf("skills/get %s = %s, %v; want a -32602 error saying it is not published", notesURI, got, getErr)
			}
		})
	}
}
