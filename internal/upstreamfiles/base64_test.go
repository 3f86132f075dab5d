package upstreamfiles

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// FuzzDecodeBase64 holds decodeBase64 to base64.StdEncoding.Decode: the
// same bytes, and an error exactly when the library errs, on any input
// without line breaks.
func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"aGVsbG8gd29ybGQh", "aGk=", "aGk=aGk=", "a", "aGVsbG8gd29ybGQhIQ==", "aGVsbG8g*29ybGQh", "aGVsbG8gd29ybGQ=", "aGVs*G8gd29ybGQhaGVsbG8g", "aGk=aGVsbG8gd29ybGQh"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if bytes.ContainsAny(src, "\r\n") {
			return
		}
		want := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
		wn, werr := base64.StdEncoding.Decode(want, src)
		got := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
		gn, gerr := decodeBase64(got, src)
		if (werr == nil) != (gerr == nil) || werr == nil && !bytes.Equal(want[:wn], got[:gn]) {
			t.Fatalf("decodeBase64(%q) = %q, %v; the library: %q, %v", src, got[:gn], gerr, want[:wn], werr)
		}
	})
}

// BenchmarkDecodeBase64 compares decodeBase64 with the library on one
// hashing chunk.
func BenchmarkDecodeBase64(b *testing.B) {
	data := make([]byte, hashChunk/4*3)
	for i := range data {
		data[i] = byte(i * 7)
	}
	src := []byte(base64.StdEncoding.EncodeToString(data))
	dst := make([]byte, len(data))
	b.Run("library", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			_, _ = base64.StdEncoding.Decode(dst, src)
		}
	})
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			_, _ = decodeBase64(dst, src)
		}
	})
}
