package upstreamfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestServedOfTakesTheRequestedURIsEntry: a resources/read result whose
// contents hold another URI's entry before the requested one's. The
// overlay's own read (servedOf) and a forwarded read hashed as it passes
// (readScan) must publish one digest for the same reply: the requested
// URI's entry, which is what readScan takes. servedOf took the first entry,
// so the listing's digest of a file flipped between the two readings of
// the same bytes.
func TestServedOfTakesTheRequestedURIsEntry(t *testing.T) {
	t.Parallel()
	const uri = "skill://n/SKILL.md"
	result := `{"contents":[{"uri":"skill://n/other.md","text":"A"},{"uri":"skill://n/SKILL.md","text":"B"}]}`
	scan := newReadScan(uri, []byte("1"))
	_, _ = scan.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + result + `}`))
	outcome, forwarded := scan.End()
	if outcome != scanServed {
		t.Fatalf("readScan outcome = %d, want scanServed", outcome)
	}
	own, err := servedOf(uri, []byte(result), "")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("B"))
	want := "sha256:" + hex.EncodeToString(sum[:])
	if forwarded.Digest != want {
		t.Fatalf("readScan digest = %s, want %s (the requested URI's entry)", forwarded.Digest, want)
	}
	if own.Digest != forwarded.Digest || own.Size != forwarded.Size {
		t.Errorf("servedOf = %s %d, readScan = %s %d: one reply, two published digests", own.Digest, own.Size, forwarded.Digest, forwarded.Size)
	}
	if got, ok := ServedEntry(uri, []byte(result)); !ok || string(got) != `{"uri":"skill://n/SKILL.md","text":"B"}` {
		t.Errorf("ServedEntry = %s, %v; want the requested URI's entry", got, ok)
	}
}
