package proxy

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// readAll sizes its buffer from the declared length; a body that ends at
// or before it (or with none declared) reads whole, one that runs past it
// is errBodyOverLength once the excess shows, so the declared length bounds
// what is read.
func TestReadAllWhateverTheDeclaredLength(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	for _, size := range []int64{-1, int64(len(body)), int64(len(body)) + 100} {
		// One byte per read: every growth step is taken.
		got, err := readAll(reading(iotest.OneByteReader(strings.NewReader(body))), size)
		if err != nil || string(got) != body {
			t.Errorf("declared %d: got %q, %v; want the body whole", size, got, err)
		}
	}
	for _, size := range []int64{0, 1, int64(len(body)) - 1} {
		got, err := readAll(reading(iotest.OneByteReader(strings.NewReader(body))), size)
		if err != errBodyOverLength || int64(len(got)) != size+1 {
			t.Errorf("declared %d: got %d bytes, %v; want %d and errBodyOverLength", size, len(got), err, size+1)
		}
	}
	boom := errors.New("boom")
	got, err := readAll(reading(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))), 10)
	if !errors.Is(err, boom) || string(got) != "abc" {
		t.Errorf("failing reader: got %q, %v; want what came before the error, and the error", got, err)
	}
}

// TestReadAllSetsAsideOnlyWhatArrives: a declared length past
// readAllUpfront is not set aside before its bytes come (found in review:
// 50 connections declaring 4 MiB and sending one byte held 200 MiB),
// and such a body still reads whole as it arrives.
func TestReadAllSetsAsideOnlyWhatArrives(t *testing.T) {
	const declared = 4 << 20
	first := &firstRead{r: strings.NewReader("{")}
	got, err := readAll(reading(first), declared)
	if err != nil || string(got) != "{" {
		t.Fatalf("got %q, %v", got, err)
	}
	if first.offered > readAllUpfront+1 {
		t.Errorf("the first read was offered %d bytes for a body declared %d long that had sent one: want at most %d set aside", first.offered, declared, readAllUpfront+1)
	}
	big := strings.Repeat("x", 3*readAllUpfront+7)
	if got, err := readAll(reading(strings.NewReader(big)), int64(len(big))); err != nil || string(got) != big {
		t.Errorf("a body of %d bytes, declared: got %d bytes, %v", len(big), len(got), err)
	}
}

// reading is r as readBody hands it to readAll, without a connection to
// set deadlines on.
func reading(r io.Reader) *stallReader {
	return &stallReader{r: io.NopCloser(r), timeout: time.Minute}
}

// firstRead records the size of the buffer its first Read was given.
type firstRead struct {
	r       io.Reader
	offered int
}

func (f *firstRead) Read(p []byte) (int, error) {
	if f.offered == 0 {
		f.offered = len(p)
	}
	return f.r.Read(p)
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
