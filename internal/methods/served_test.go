package methods

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"runtime"
	"testing"
)

// TestServedOfBigBlobMemory hashes a 16 MiB blob reply and checks that the
// allocations stay within a small multiple of the blob, not a copy per step.
func TestServedOfBigBlobMemory(t *testing.T) {
	blob := make([]byte, 16<<20)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	result := []byte(`{"contents":[{"uri":"skill://s/big.bin","mimeType":"application/octet-stream","blob":"` + base64.StdEncoding.EncodeToString(blob) + `"}]}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := servedOf("skill://s/big.bin", result)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	if want := "sha256:" + hex.EncodeToString(sum[:]); s.digest != want || s.size != int64(len(blob)) {
		t.Fatalf("servedOf = %s %d, want %s %d", s.digest, s.size, want, len(blob))
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("hashing a %d-byte blob (%d-byte reply) allocated %d bytes", len(blob), len(result), allocated)
	if limit := uint64(2 * len(result)); allocated > limit {
		t.Errorf("allocated %d bytes for a %d-byte reply, want at most %d", allocated, len(result), limit)
	}
}
