package upstreamfiles

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkReadScan measures readScan alone on the two replies whose cost
// matters: a 16 MiB blob (22 MB of base64 on the wire, skillsbench's blob
// row) and about 12 MB of text dense with escapes (source code: quotes,
// backslashes, newlines, tabs and non-ASCII, which encoding/json escapes
// as \u2028-style or leaves as UTF-8), fed in 32 KiB pieces as the tap sees
// a reply. MB/s is of the wire bytes; decoded-MB/s of the bytes hashed.
func BenchmarkReadScan(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	blob := make([]byte, 16<<20)
	for i := range blob {
		blob[i] = byte(rng.Uint32())
	}
	line := "\tif s := \"quoted\\path\"; len(s) > 0 { fmt.Println(`naïve → ok`, s) } // ünïcödé <&>\n"
	text := strings.Repeat(line, 12<<20/len(line))
	for _, c := range []struct {
		name    string
		field   string
		value   any
		decoded int
	}{
		{"blob16MiB", "blob", base64.StdEncoding.EncodeToString(blob), len(blob)},
		{"text12MB", "text", text, len(text)},
	} {
		msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1,
			"result": map[string]any{"contents": []any{map[string]any{"uri": "skill://s/f", c.field: c.value}}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			s := newReadScan("skill://s/f", []byte("1"))
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				for p := msg; len(p) > 0; {
					k := min(32<<10, len(p))
					s.Write(p[:k])
					p = p[k:]
				}
				if out, got := s.End(); out != scanServed || got.Size != int64(c.decoded) {
					b.Fatalf("outcome %d, size %d; want served, %d", out, got.Size, c.decoded)
				}
			}
			b.ReportMetric(float64(c.decoded)*float64(b.N)/b.Elapsed().Seconds()/1e6, "decoded-MB/s")
		})
	}
}
