package h1

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// A head that arrives a byte at a time (a slow client, or one that sends
// it so on purpose) must cost about what net/http's reader pays for it:
// work in proportion to its length, not to its length times the reads it
// came in. Rescanning the whole head at each read made a 64 KiB head cost
// the server seconds of CPU where net/http's costs milliseconds. The bound
// is net/http's own time on the same bytes, measured alongside, widened
// twentyfold: a loaded machine slows both, and the rescans cost hundreds
// of times more.
func TestTrickledHeadCostsWhatNetHTTPs(t *testing.T) {
	const limit = 64 << 10
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: a\r\n")
	for b.Len() < limit-100 {
		b.WriteString("X-Pad: 0123456789abcdef\r\n")
	}
	b.WriteString("\r\n")
	plain := []byte(b.String())
	// A bare LF makes the head net/http's reader's: readHead waits for
	// its end before handing it over.
	other := bytes.Replace(plain, []byte("Host: a\r\n"), []byte("Host: a\n"), 1)
	trickled := func(data []byte) *bufio.Reader {
		return bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(data)), smallRead)
	}
	fastest := func(f func()) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			f()
			best = min(best, time.Since(start))
		}
		return best
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"plain", plain}, {"net/http's", other}} {
		t.Run(tc.name, func(t *testing.T) {
			theirs := fastest(func() {
				if _, err := http.ReadRequest(trickled(tc.data)); err != nil {
					t.Fatal(err)
				}
			})
			ours := fastest(func() {
				br := trickled(tc.data)
				_, err := readHead(br, false, limit, nil)
				for err == errHeadTooLong {
					br = grow(br, br, min(2*br.Size(), limit))
					_, err = readHead(br, false, limit, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			})
			if ours > 20*theirs+100*time.Millisecond {
				t.Errorf("a %d-byte head read a byte at a time took %v here, %v by net/http's reader", len(tc.data), ours, theirs)
			}
		})
	}
}
