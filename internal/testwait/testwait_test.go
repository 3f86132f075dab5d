package testwait

import (
	"fmt"
	"testing"
	"time"
)

// fakeT records a failure instead of ending the test.
type fakeT struct{ failed string }

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f) // as t.Fatalf ends the goroutine
}

func run(timeout time.Duration, cond func() bool) (failed string) {
	f := &fakeT{}
	func() {
		defer func() {
			if r := recover(); r != nil && r != f {
				panic(r)
			}
		}()
		For(f, timeout, cond, "the thing")
	}()
	return f.failed
}

// TestFor: a condition that comes true returns without failing; one that
// never does fails, naming what was waited for.
func TestFor(t *testing.T) {
	n := 0
	if got := run(time.Minute, func() bool { n++; return n >= 3 }); got != "" || n != 3 {
		t.Errorf("a condition true on the third look: failed %q after %d looks", got, n)
	}
	if got := run(30*time.Millisecond, func() bool { return false }); got != "waited 30ms for the thing" {
		t.Errorf("a condition never true: failed %q, want the wait named", got)
	}
}
