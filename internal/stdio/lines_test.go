package stdio

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readAll returns every line read from in with limit max, an overlong line
// as "!<length>".
func readAll(in string, max int) []string {
	lr := newLineReader(strings.NewReader(in), max)
	var out []string
	for {
		line, long, err := lr.next()
		if errors.Is(err, errLineTooLong) {
			out = append(out, "!"+strconv.Itoa(long.n))
			continue
		}
		if err != nil {
			return out
		}
		out = append(out, string(line))
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		max      int
		want     []string
	}{
		{"lines", "a\nbb\n", 10, []string{"a", "bb"}},
		{"crlf", "a\r\nb", 10, []string{"a", "b"}},
		{"last without newline", "a\nb", 10, []string{"a", "b"}},
		{"empty line kept", "\na\n", 10, []string{"", "a"}},
		{"at the limit", "abcd\nx\n", 4, []string{"abcd", "x"}},
		{"over the limit, then on", "abcde\nx\n", 4, []string{"!6", "x"}},
		{"over the limit at the end", "x\nabcdefg", 4, []string{"x", "!7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, readAll(tc.in, tc.max)); diff != "" {
				t.Errorf("lines of %q (max %d) (-want +got):\n%s", tc.in, tc.max, diff)
			}
		})
	}
}

// TestLineReaderLong: a line far over the buffer and the limit is read in
// pieces, kept only at its ends, and the next line is read whole.
func TestLineReaderLong(t *testing.T) {
	t.Parallel()
	head, tail := `{"id":"first"`, `"id":"last"}`
	long := head + strings.Repeat("y", 1<<20) + tail
	lr := newLineReader(strings.NewReader(long+"\nnext\n"), 64<<10)
	_, ov, err := lr.next()
	if !errors.Is(err, errLineTooLong) || ov.n != len(long)+1 || !bytes.HasPrefix(ov.head, []byte(head)) || !bytes.HasSuffix(ov.tail, []byte(tail+"\n")) {
		t.Fatalf("long line: err %v, overlong %d bytes", err, ov.n)
	}
	if line, _, err := lr.next(); string(line) != "next" || err != nil {
		t.Errorf("after the long line: %q, %v", line, err)
	}
	if _, _, err := lr.next(); err != io.EOF {
		t.Errorf("at the end: %v, want EOF", err)
	}
}

// FuzzLineReader: whatever the bytes, every line returned is within the
// limit and has no newline, and the lines with the overlong ones account
// for the input.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{"a\nbb\n", "a\r\nb", "abcde\nx\n", "\n\n", "x\nabcdefg"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max <= 0 || max > 1<<16 {
			return
		}
		lr := newLineReader(strings.NewReader(in), max)
		total := 0
		for {
			line, long, err := lr.next()
			if errors.Is(err, errLineTooLong) {
				if long.n <= max || len(long.head) > overlongKeep || len(long.tail) > overlongKeep {
					t.Fatalf("overlong of %d bytes with max %d", long.n, max)
				}
				total += long.n
				continue
			}
			if err != nil {
				break
			}
			if len(line) > max || bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line %q with max %d", line, max)
			}
			total += len(line)
		}
		if total > len(in) {
			t.Fatalf("read %d bytes from %d", total, len(in))
		}
	})
}
