package methods

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// FuzzEachChunk: a file encoded a chunk at a time is, joined, exactly its
// encoding as a whole, whatever the chunk size and wherever a multi-byte
// rune, an escape or an invalid byte falls: a streamed resources/read
// serves the bytes the digest describes.
func FuzzEachChunk(f *testing.F) {
	for _, seed := range []string{"", "plain", "é\u2028\"<>&\n\x01", "\xff\xfe broken \xe2\x80", "abc", "é\x80\xa8\"<>&", "\U0001F600\U0001F600"} {
		f.Add([]byte(seed), true, uint8(1))
		f.Add([]byte(seed), false, uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, text bool, k uint8) {
		size := 3 * (int(k%16) + 1)
		file := &catalog.File{Data: data, Text: text}
		var got bytes.Buffer
		if err := eachChunk(file, nil, size, func(enc []byte) error { got.Write(enc); return nil }); err != nil {
			t.Fatal(err)
		}
		var want []byte
		if text {
			want = rewrite.AppendString(nil, data)
			want = want[1 : len(want)-1]
		} else {
			want = base64.StdEncoding.AppendEncode(nil, data)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("chunks of %d joined = %q, want %q", size, got.Bytes(), want)
		}
	})
}
