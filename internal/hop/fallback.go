package hop

import (
	"net/http"
)

// FallbackPartitions is how many partitions' clones of a Fallback that is
// net/http's Transport are kept at most (Transport.Fallback). Each keeps
// the idle connections its template allows: the template's idle limits
// times this bound cap what the clones pool.
const FallbackPartitions = 64

// fallbackEntry is one partition's clone of the Fallback and when it was
// last used (Transport.fbClock).
type fallbackEntry struct {
	rt   *http.Transport
	used uint64
}

// fallback returns what carries req when the Transport does not: the
// Fallback, or, when it is net/http's Transport and the pool is
// partitioned, that partition's clone of it. net/http pools connections by
// address alone; a clone per partition keeps one caller's https
// connections from carrying another's requests, as the pool does for
// plain http. A new partition past FallbackPartitions evicts the one used
// least recently, whose idle connections close (a connection carrying a
// request then goes back to the evicted clone, where it closes after the
// template's IdleConnTimeout, reused by nobody).
func (t *Transport) fallback(req *http.Request) http.RoundTripper {
	base, ok := t.Fallback.(*http.Transport)
	if !ok || len(t.Partition) == 0 {
		return t.Fallback
	}
	key := t.poolKey("", req)
	t.fbMu.Lock()
	t.fbClock++
	if e := t.fallbacks[key]; e != nil {
		e.used = t.fbClock
		t.fbMu.Unlock()
		return e.rt
	}
	var evicted *http.Transport
	if len(t.fallbacks) >= FallbackPartitions {
		var oldKey string
		var old *fallbackEntry
		for k, e := range t.fallbacks {
			if old == nil || e.used < old.used {
				oldKey, old = k, e
			}
		}
		delete(t.fallbacks, oldKey)
		evicted = old.rt
	}
	if t.fallbacks == nil {
		t.fallbacks = make(map[string]*fallbackEntry)
	}
	rt := base.Clone()
	t.fallbacks[key] = &fallbackEntry{rt: rt, used: t.fbClock}
	t.fbMu.Unlock()
	if evicted != nil {
		evicted.CloseIdleConnections()
	}
	return rt
}

// closeFallbacks closes the idle connections of the Fallback and of every
// clone of it.
func (t *Transport) closeFallbacks() {
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
	t.fbMu.Lock()
	rts := make([]*http.Transport, 0, len(t.fallbacks))
	for _, e := range t.fallbacks {
		rts = append(rts, e.rt)
	}
	t.fbMu.Unlock()
	for _, rt := range rts {
		rt.CloseIdleConnections()
	}
}
