package h1

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// TestTrickledHeadIsLookedAtOnce: a head that arrives a byte at a time (a
// slow client, or one that sends it so on purpose) must cost readHead
// work in proportion to its length, as net/http's reader reads it line by
// line, not its length times the reads it came in: looking again at the
// whole head at each read made a 64 KiB head cost seconds of CPU where
// net/http's reader pays milliseconds. Counted by the bytes each look
// spans (lookHook), not by a clock. Not parallel: lookHook is the
// package's.
func TestTrickledHeadIsLookedAtOnce(t *testing.T) {
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
	var spanned int
	lookHook = func(n int) { spanned += n }
	defer func() { lookHook = nil }()
	for _, tc := range []struct {
		name string
		data []byte
	}{{"plain", plain}, {"net/http's", other}} {
		// The judge: net/http's reader takes the same bytes.
		if _, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(tc.data))); err != nil {
			t.Fatalf("%s: net/http's reader refuses the test's head: %v", tc.name, err)
		}
		spanned = 0
		br := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(tc.data)), smallRead)
		x, err := readHead(br, false, limit, nil)
		for err == errHeadTooLong { // read again from a larger buffer, as the server does
			br = grow(br, br, min(2*br.Size(), limit))
			x, err = readHead(br, false, limit, nil)
		}
		if err != nil || x == nil || x.req.Header.Get("X-Pad") == "" {
			t.Fatalf("%s: readHead = %v, %v", tc.name, x, err)
		}
		// Each byte is looked at a few times: for a line end as it comes,
		// when its line is judged, and again after each growth of the
		// buffer (the sizes double, so the growths' looks together span
		// about twice the head, for the line ends and for the judging).
		// Looking again at the whole head at each line spans
		// about its length squared over twice a line's, here 80 million.
		if bound := 12 * len(tc.data); spanned > bound {
			t.Errorf("%s: a %d-byte head read a byte at a time was looked at over %d bytes, want at most %d",
				tc.name, len(tc.data), spanned, bound)
		}
	}
}
