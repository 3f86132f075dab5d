package upstreamfiles

import "time"

// Test hooks, for this package's external tests (package upstreamfiles_test)
// only: being in a _test.go file, they are compiled into no build of the
// sidecar. Those tests drive the overlay through a whole sidecar
// (skills/list and resources/read against a real upstream) and steer and
// observe it through these functions.

// SetOverlayClock replaces the clock o checks its TTL against, so a test
// can step past the TTL instead of sleeping through it. Call it before o
// serves anything.
func SetOverlayClock(o *Overlay, now func() time.Time) { o.now = now }

// SetPrefetchTimeout shortens the bound of one prefetch for a test; the
// returned func restores it.
func SetPrefetchTimeout(d time.Duration) (restore func()) {
	old := prefetchTimeout
	prefetchTimeout = d
	return func() { prefetchTimeout = old }
}

// Prefetches reports how many prefetches of o are running.
func Prefetches(o *Overlay) int { return len(o.prefetches) }

// Contexts reports how many authorization contexts o caches.
func Contexts(o *Overlay) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.contexts)
}

// Verdicts reports how many file verdicts o's contexts hold in all.
func Verdicts(o *Overlay) int {
	return sumContexts(o, func(c *authContext) int { return len(c.files) })
}

// ReadWaiters reports how many requests have waited on reads under way in
// o's contexts (counted when each starts waiting).
func ReadWaiters(o *Overlay) int {
	return sumContexts(o, func(c *authContext) int {
		n := 0
		for _, rc := range c.reading {
			n += rc.waiters
		}
		return n
	})
}

// sumContexts adds up count over o's contexts, each read under its lock.
func sumContexts(o *Overlay, count func(*authContext) int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.contexts {
		c.mu.Lock()
		n += count(c)
		c.mu.Unlock()
	}
	return n
}

// IDNumber is JavaScript's Number() of a raw JSON-RPC id (replyid.go),
// for a test's judge of which reply a TypeScript client takes.
func IDNumber(raw []byte) (float64, bool) { return idNumber(raw) }
