package methods

import "time"

// SetOverlayClock replaces the clock o checks its TTL against, so a test
// can step past the TTL instead of sleeping through it. Call it before o
// serves anything.
func SetOverlayClock(o *Overlay, now func() time.Time) { o.now = now }
