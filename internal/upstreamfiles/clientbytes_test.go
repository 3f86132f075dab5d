package upstreamfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// published is what each path publishes for one reply: the overlay's own
// read (servedOf, given the result) and a forwarded read hashed as it
// passes (readScan, given the whole message); "" when it publishes
// nothing.
func published(t *testing.T, uri, result string) (own, forwarded string) {
	t.Helper()
	if s, err := servedOf(uri, []byte(result), ""); err == nil {
		own = s.Digest
	}
	if out, s := scanPieces([]byte(`{"jsonrpc":"2.0","id":1,"result":`+result+`}`), uri, []byte("1"), 0); out == scanServed {
		forwarded = s.Digest
	}
	return own, forwarded
}

// goSDKText is the text a go-sdk client takes from the reply's entry.
func goSDKText(t *testing.T, result string) string {
	t.Helper()
	var r mcp.ReadResourceResult
	if err := json.Unmarshal([]byte(result), &r); err != nil {
		t.Fatalf("go-sdk client: %v", err)
	}
	return r.Contents[0].Text
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestTextNotUnicodeHasNoDigest: a text entry that is not Unicode (bytes
// that are not UTF-8, an escaped lone surrogate) is decoded differently by
// each client: encoding/json (a go-sdk client) puts one U+FFFD in place of
// each bad byte, the WHATWG decoder a TypeScript SDK client reads its body
// with puts one in place of each maximal subpart (Unicode 3.9, "U+FFFD
// Substitution of Maximal Subparts"), and Python keeps a lone surrogate,
// which it cannot encode as UTF-8 at all. A digest published for such text
// is one some client cannot reproduce, so neither path may publish one, and
// the two paths must agree on every reply.
func TestTextNotUnicodeHasNoDigest(t *testing.T) {
	t.Parallel()
	const uri = "skill://u/notes.md"
	for name, tc := range map[string]struct {
		text string // the JSON string's body, as the upstream's bytes
		// node is the digest of what JSON.parse yields in Node for the
		// body, hashed as UTF-8 (crypto's update(s, "utf8")); "" where
		// it cannot be one digest. Obtained with node -e, parsing the
		// message's bytes decoded by Buffer.toString("utf8").
		node string
	}{
		// a FF b E2 82 c F0 9F 98 d: Node reads "a\uFFFDb\uFFFDc\uFFFDd",
		// 13 bytes; encoding/json one U+FFFD per byte, 19 bytes.
		"bytes not UTF-8": {"a\xffb\xe2\x82c\xf0\x9f\x98d", "sha256:2c5ee14db6e4a26ca83c24547a129e929cd636b5edf1b4aab4b8cc9e3e314c2a"},
		// "\ud800x": Node's string holds the lone surrogate (hashed as
		// U+FFFD), Python's too (hashing it raises).
		"lone surrogate": {`\ud800x`, ""},
		// Control: valid text is published alike by both paths.
		"valid": {"a\u00e9\\n\U0001F600", "sha256:" + func() string { s := sha256.Sum256([]byte("a\u00e9\n\U0001F600")); return hex.EncodeToString(s[:]) }()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			result := `{"contents":[{"uri":"` + uri + `","mimeType":"text/markdown","text":"` + tc.text + `"}]}`
			own, forwarded := published(t, uri, result)
			if own != forwarded {
				t.Errorf("one reply, two verdicts: own read publishes %q, a forwarded read %q", own, forwarded)
			}
			goSDK := digestOf([]byte(goSDKText(t, result)))
			for path, got := range map[string]string{"own read": own, "forwarded read": forwarded} {
				if got == "" {
					if name == "valid" {
						t.Errorf("%s publishes nothing for valid text", path)
					}
					continue
				}
				if got != goSDK || got != tc.node {
					t.Errorf("%s publishes %s; a go-sdk client hashes %s, a Node client %q", path, got, goSDK, tc.node)
				}
			}
		})
	}
}

// TestTextAndBlobHasNoDigest: an entry with both text and blob is neither
// TextResourceContents nor BlobResourceContents (the MCP schema); a go-sdk
// client fills both fields, and which bytes it takes is its caller's
// guess. Neither path publishes a digest for it.
func TestTextAndBlobHasNoDigest(t *testing.T) {
	t.Parallel()
	const uri = "skill://u/notes.md"
	result := `{"contents":[{"uri":"` + uri + `","text":"a","blob":"Yg=="}]}`
	var r mcp.ReadResourceResult
	if err := json.Unmarshal([]byte(result), &r); err != nil || r.Contents[0].Text != "a" || string(r.Contents[0].Blob) != "b" {
		t.Fatalf("the case is wrong: a go-sdk client reads %+v, %v; want both fields filled", r.Contents, err)
	}
	own, forwarded := published(t, uri, result)
	if own != "" || forwarded != "" {
		t.Errorf("an entry with text and blob: own read publishes %q, a forwarded read %q; want nothing from either", own, forwarded)
	}
}
