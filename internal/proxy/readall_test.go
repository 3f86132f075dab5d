package proxy

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
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

// A deadline is moved again only once it is older than the lazy delay: a
// sixteenth of the timeout, at most 300 ms, so a write or read always has
// at least timeout - min(timeout/16, 300 ms).
func TestDeadlinesRenewLazily(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		since, timeout time.Duration
		want           bool
	}{
		{0, time.Minute, false},
		{299 * time.Millisecond, time.Minute, false},
		{300 * time.Millisecond, time.Minute, true},
		{time.Hour, time.Minute, true},
		{12 * time.Millisecond, 200 * time.Millisecond, false},
		{13 * time.Millisecond, 200 * time.Millisecond, true},
	} {
		if got := renewDue(t0, t0.Add(c.since), c.timeout); got != c.want {
			t.Errorf("set %v ago, timeout %v: renew %v, want %v", c.since, c.timeout, got, c.want)
		}
	}
	if !renewDue(time.Time{}, t0, time.Minute) {
		t.Error("a deadline never set is not renewed")
	}
}
