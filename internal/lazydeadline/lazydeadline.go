// Package lazydeadline owns the rule by which the sidecar moves the
// deadlines of its connections lazily, as nginx moves its timers
// (NGX_TIMER_LAZY_DELAY): a deadline for a timeout that was set less than
// Delay(timeout) ago stays as it is. Each move costs a lock and a timer
// update in the Go runtime's poller, and a forwarded call would otherwise
// pay several; lazily, a wait still gets at least fifteen sixteenths of its
// timeout, and never less than the timeout minus 300 ms.
//
// It is pure: it says when to move a deadline and must not move one.
package lazydeadline

import "time"

// Delay is how recently a deadline for timeout may have been set for a
// move to leave it as it is: a sixteenth of the timeout, at most 300 ms.
func Delay(timeout time.Duration) time.Duration {
	return min(timeout/16, 300*time.Millisecond)
}

// Due reports whether a deadline for timeout last set at last (zero: none
// is in force) is to be moved at now.
func Due(last, now time.Time, timeout time.Duration) bool {
	return last.IsZero() || now.Sub(last) >= Delay(timeout)
}
