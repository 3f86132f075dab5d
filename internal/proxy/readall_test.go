package proxy

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll sizes its buffer from the declared length; what it returns must
// not depend on whether the declaration was right.
func TestReadAllWhateverTheDeclaredLength(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	for _, size := range []int64{-1, 0, 1, int64(len(body)) - 1, int64(len(body)), int64(len(body)) + 100} {
		// One byte per read: every growth step is taken.
		got, err := readAll(iotest.OneByteReader(strings.NewReader(body)), size)
		if err != nil || string(got) != body {
			t.Errorf("declared %d: got %q, %v; want the body whole", size, got, err)
		}
	}
	boom := errors.New("boom")
	got, err := readAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 10)
	if !errors.Is(err, boom) || string(got) != "abc" {
		t.Errorf("failing reader: got %q, %v; want what came before the error, and the error", got, err)
	}
}

// The fast path answers exactly what the parser does.
func TestMediaTypeFastPathAgreesWithTheParser(t *testing.T) {
	for ct, want := range map[string]string{
		"":                                 "",
		"application/json":                 "application/json",
		"text/event-stream":                "text/event-stream",
		"Application/JSON":                 "application/json",
		"text/event-stream; charset=utf-8": "text/event-stream",
		"application/json;":                "application/json",
		"no slash":                         "",
	} {
		if got := mediaType(ct); got != want {
			t.Errorf("mediaType(%q) = %q, want %q", ct, got, want)
		}
	}
}
