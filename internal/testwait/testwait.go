// Package testwait owns the one way tests wait for something another
// goroutine or process does: For polls a condition until it holds, and
// fails the test when a generous bound passes. The bound is a hang guard,
// never a measure: a test must not pass or fail on how fast the machine
// is. Only tests import it; it imports nothing of the module, so every
// package's own tests can use it, those below sidecartest included.
package testwait

import "time"

// TB is the part of testing.TB For uses (this package is built as
// production code, which may not import package testing).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// poll is how often For looks at the condition.
const poll = 10 * time.Millisecond

// For returns once cond holds, and fails t (naming what it waited for)
// when it still does not after timeout.
func For(t TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	for end := time.Now().Add(timeout); !cond(); time.Sleep(poll) {
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}
