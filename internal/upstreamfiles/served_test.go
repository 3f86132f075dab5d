package upstreamfiles

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
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
	s, err := servedOf("skill://s/big.bin", result, "")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	if want := "sha256:" + hex.EncodeToString(sum[:]); s.Digest != want || s.Size != int64(len(blob)) {
		t.Fatalf("servedOf = %s %d, want %s %d", s.Digest, s.Size, want, len(blob))
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("hashing a %d-byte blob (%d-byte reply) allocated %d bytes", len(blob), len(result), allocated)
	if limit := uint64(2 * len(result)); allocated > limit {
		t.Errorf("allocated %d bytes for a %d-byte reply, want at most %d", allocated, len(result), limit)
	}
}

// FuzzServedOf checks servedOf against encoding/json: for any result that
// is JSON it either fails or digests exactly the bytes a Go client decodes
// from the text or blob of the first content for the URI read (else the
// first content), never other bytes; and the text of any UTF-8 string, and
// the bytes of any blob, encoded as a client's library would, are always
// digested.
func FuzzServedOf(f *testing.F) {
	for _, s := range []string{
		`{"contents":[{"uri":"u","text":"hi\n"}]}`,
		`{"contents":[{"uri":"u","blob":"aGk="}]}`,
		`{"contents":[{"uri":"u","blob":"aG\r\nk="}]}`,
		`{"contents":[{"uri":"u","blob":"aGk=aGk="}]}`,
		`{"contents":[{"uri":"u","blob":"aGk"}]}`,
		`{"contents":[{"uri":"u","text":"\u00e9\ud800"}]}`,
		`{"contents":[{"uri":"u","text":"x","text":"y"}]}`,
		`{"contents":[{"uri":"u","text":"x","blob":"eQ=="}]}`,
		"{\"contents\":[{\"uri\":\"u\",\"text\":\"a\xffb\"}]}",
		`{"contents":[]}`,
		`{"contents":[{"uri":"u","blob":null}]}`,
		`{"contents":[{"uri":"u","text":1}]}`,
		`{"contents":{"a":1}}`,
		`{"contents":[{"uri":"u","text":"x"},{"uri":"skill://s/f.bin","text":"y"}]}`,
	} {
		f.Add([]byte(s))
	}
	const uri = "skill://s/f.bin"
	f.Fuzz(func(t *testing.T, in []byte) {
		if json.Valid(in) { // servedOf is only given results of messages checked to be JSON
			got, err := servedOf(uri, in, "")
			// Maps, not structs: member names are matched exactly, as the
			// protocol spells them (a struct would also take "Contents").
			var res map[string]json.RawMessage
			var contents []json.RawMessage
			var want []byte
			wantOK := json.Unmarshal(in, &res) == nil && json.Unmarshal(res["contents"], &contents) == nil && len(contents) > 0
			if wantOK {
				entry := contents[0]
				for _, e := range contents {
					var u struct {
						URI *string `json:"uri"`
					}
					var m map[string]json.RawMessage
					if json.Unmarshal(e, &m) == nil && json.Unmarshal(m["uri"], &u.URI) == nil && u.URI != nil && *u.URI == uri {
						entry = e
						break
					}
				}
				var c map[string]json.RawMessage
				wantOK = json.Unmarshal(entry, &c) == nil
				if t, has := c["text"]; wantOK && has {
					var s string
					wantOK = len(t) > 0 && t[0] == '"' && json.Unmarshal(t, &s) == nil
					want = []byte(s)
				} else if b, has := c["blob"]; wantOK && has {
					wantOK = len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &want) == nil
				} else {
					wantOK = false
				}
			}
			if err == nil && !wantOK {
				t.Fatalf("servedOf(%q) = %s; encoding/json decodes no bytes from it", in, got.Digest)
			}
			sum := sha256.Sum256(want)
			if d := "sha256:" + hex.EncodeToString(sum[:]); err == nil && (got.Digest != d || got.Size != int64(len(want))) {
				t.Fatalf("servedOf(%q) = %s %d, want %s %d (%q)", in, got.Digest, got.Size, d, len(want), want)
			}
		}
		want := sha256.Sum256(in)
		for field, v := range map[string]any{"text": string(in), "blob": in} {
			if field == "text" && !utf8.Valid(in) {
				continue // no client's library encodes such a string
			}
			result, _ := json.Marshal(map[string]any{"contents": []any{map[string]any{"uri": uri, "mimeType": "text/plain", field: v}}})
			got, err := servedOf(uri, result, "")
			if d := "sha256:" + hex.EncodeToString(want[:]); err != nil || got.Digest != d || got.Size != int64(len(in)) {
				t.Fatalf("servedOf(%s) = %s %d, %v; want %s %d", result, got.Digest, got.Size, err, d, len(in))
			}
		}
	})
}

// TestServedOfChunkBoundaries: blobs longer than one decoding chunk agree
// with encoding/json when line breaks shift the chunks (MIME-style lines)
// and when padding ends a chunk that is not the last.
func TestServedOfChunkBoundaries(t *testing.T) {
	t.Parallel()
	data := make([]byte, 3*hashChunk)
	for i := range data {
		data[i] = byte(i * 13)
	}
	enc := base64.StdEncoding.EncodeToString(data)
	var wrapped strings.Builder
	for i := 0; i < len(enc); i += 76 {
		wrapped.WriteString(enc[i:min(i+76, len(enc))] + "\r\n")
	}
	padded := base64.StdEncoding.EncodeToString(data[:hashChunk/4*3-1]) // ends in "=" at the chunk's end
	for name, blob := range map[string]string{
		"one line":               enc,
		"lines of 76":            wrapped.String(),
		"data after the padding": padded + "aGk=",
	} {
		in, _ := json.Marshal(map[string]any{"contents": []any{map[string]string{"uri": "u", "blob": blob}}})
		var want struct {
			Contents []struct{ Blob []byte }
		}
		wantErr := json.Unmarshal(in, &want)
		got, err := servedOf("u", in, "")
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: servedOf error = %v, encoding/json error = %v", name, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		sum := sha256.Sum256(want.Contents[0].Blob)
		if d := "sha256:" + hex.EncodeToString(sum[:]); got.Digest != d || got.Size != int64(len(want.Contents[0].Blob)) {
			t.Errorf("%s: servedOf = %s %d, want %s %d", name, got.Digest, got.Size, d, len(want.Contents[0].Blob))
		}
	}
}

// BenchmarkServedOf measures hashing a 1 MiB skill file as an upstream
// serves it (blob and text), in decoded bytes per second.
func BenchmarkServedOf(b *testing.B) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	for name, content := range map[string]map[string]any{
		"blob": {"uri": "u", "blob": data},
		"text": {"uri": "u", "text": string(data)},
	} {
		in, _ := json.Marshal(map[string]any{"contents": []any{content}})
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := servedOf("u", in, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
