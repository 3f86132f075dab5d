package lazydeadline

import (
	"testing"
	"time"
)

// A deadline is moved again only once it is older than the lazy delay: a
// sixteenth of the timeout, at most 300 ms, so a write or read always has
// at least timeout - min(timeout/16, 300 ms).
func TestDue(t *testing.T) {
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
		if got := Due(t0, t0.Add(c.since), c.timeout); got != c.want {
			t.Errorf("set %v ago, timeout %v: move %v, want %v", c.since, c.timeout, got, c.want)
		}
	}
	if !Due(time.Time{}, t0, time.Minute) {
		t.Error("a deadline never set is not set")
	}
}
