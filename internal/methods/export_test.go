package methods

import "time"

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
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.contexts {
		c.mu.Lock()
		n += len(c.files)
		c.mu.Unlock()
	}
	return n
}

// ReadWaiters reports how many requests have waited on reads under way in
// o's contexts (counted when each starts waiting).
func ReadWaiters(o *Overlay) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.contexts {
		c.mu.Lock()
		for _, rc := range c.reading {
			n += rc.waiters
		}
		c.mu.Unlock()
	}
	return n
}
