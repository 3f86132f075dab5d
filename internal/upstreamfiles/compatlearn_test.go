package upstreamfiles_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostCompatReadsPublishDigests: the prompt and the loading tool of
// host compatibility give a caller the upstream's SKILL.md; when those
// bytes changed since the caller's listing, the next skills/list
// publishes the digest and size of the bytes the caller took, as after a
// forwarded resources/read, not the ones it was told before.
func TestHostCompatReadsPublishDigests(t *testing.T) {
	t.Parallel()
	changed := strings.Replace(quotedNotes, "# Notes", "# Notes, as the upstream serves them now", 1)
	sum := sha256.Sum256([]byte(changed))
	want := "sha256:" + hex.EncodeToString(sum[:])
	for _, via := range []struct {
		name   string
		method string
		params map[string]any
	}{
		{"skill_load tool", "tools/call", map[string]any{"name": "skill_load", "arguments": map[string]any{"skill": "notes"}}},
		{"prompt", "prompts/get", map[string]any{"name": "skill_notes"}},
	} {
		t.Run(via.name, func(t *testing.T) {
			t.Parallel()
			var text atomic.Value
			text.Store(quotedNotes)
			e := overlayRig(t, &text, overlayConfig{skillMD: quotedNotes, hostCompat: "prompts,tools", ttl: time.Hour})
			if servedDigest(t, e.url) == want {
				t.Fatal("the test is wrong: the first listing already has the changed bytes' digest")
			}
			text.Store(changed)
			res := modernCall(t, e.url, via.method, via.params)
			if !strings.Contains(string(res), "as the upstream serves them now") {
				t.Fatalf("%s = %s, want the upstream's changed bytes", via.method, res)
			}
			if got := servedDigest(t, e.url); got != want {
				t.Errorf("skills/list after %s digests SKILL.md as %s, want the bytes the caller took: %s", via.name, got, want)
			}
		})
	}
}

// servedDigest is the digest skills/list publishes for notes/SKILL.md.
func servedDigest(t *testing.T, u string) string {
	t.Helper()
	for _, r := range skillsOf(t, modernCall(t, u, "skills/list", nil))[notesURI].Resources {
		if r.URI == notesURI {
			return r.Digest
		}
	}
	t.Fatalf("skills/list has no %s", notesURI)
	return ""
}
