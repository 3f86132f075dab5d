package bridge

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
)

// Defaults of the session holder.
const (
	// DefaultMaxSessions caps the legacy sessions held for callers at once;
	// past it the least recently used one is closed.
	DefaultMaxSessions = 256
	// DefaultIdleTimeout is how long an unused session is kept.
	DefaultIdleTimeout = 5 * time.Minute
)

// session is one legacy upstream session held for the callers of one
// authorization context and client-capability set, or for one
// subscriptions/listen stream (pinned).
type session struct {
	key     string
	pinned  bool      // a listen stream's: never evicted or expired, dropped when it ends
	owner   caller.ID // whose share it counts against (package caller)
	id      string    // Mcp-Session-Id; "" when the upstream minted none
	version string    // the negotiated protocol version
	init    initResult
	url     string      // the upstream endpoint, for DELETE
	creds   http.Header // the credentials it was opened with, for DELETE
	// unwatch ends the session's GET stream (watch); nil when none
	// was opened.
	unwatch func()

	ready chan struct{} // closed when opened (or failed)
	err   error
	deny  *onbehalf.Refusal // the upstream's refusal of initialize, passed on

	mu   sync.Mutex
	used time.Time
	// waiting counts the calls on it waiting for a client's retry
	// (input_required), inflight its requests under way (call.go):
	// eviction spares it while any are.
	waiting, inflight atomic.Int32
}

func (s *session) touch(now time.Time) {
	s.mu.Lock()
	s.used = now
	s.mu.Unlock()
}

func (s *session) lastUsed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// sessionKey keys a held session: the caller's credentials and network
// identity (onbehalf.SessionKey) and its client capabilities, so no two
// authorization contexts, client addresses or capability sets share one.
func sessionKey(h http.Header, credentials []string, caps []byte) string {
	k := onbehalf.SessionKey(h, credentials, caps)
	return hex.EncodeToString(k[:])
}

// holder keeps sessions by key, at most sessions.Cap(), each caller at
// most its share, none idle longer than idle.
type holder struct {
	sessions *caller.Table // every session held
	listens  *caller.Table // the pinned ones among them
	idle     time.Duration
	now      func() time.Time
	// closed is called (without the lock held) for every session dropped.
	closed func(*session)
	count  func(int)

	mu sync.Mutex
	m  map[string]*session
}

// get returns the session for key, opening it for owner with open when
// there is none, reserved: it counts as busy (never evicted) until the
// caller's release, taken under the holder's lock, so no other caller
// making room can end it between get and the request the caller sends on
// it. Concurrent callers of one key wait for one open. When owner holds
// its share, or the table is full, and every session that could make
// room is busy, the session returned failed with a *caller.Refusal.
func (h *holder) get(key string, owner caller.ID, open func(*session)) *session {
	now := h.now()
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]*session{}
	}
	if s, ok := h.m[key]; ok {
		s.inflight.Add(1)
		h.mu.Unlock()
		<-s.ready
		s.touch(now)
		return s
	}
	s := &session{key: key, owner: owner, ready: make(chan struct{}), used: now}
	s.inflight.Add(1)
	return h.add(s, open)
}

// release ends the reservation get took.
func (s *session) release() { s.inflight.Add(-1) }

// listens numbers the keys of listen streams' sessions.
var listens atomic.Uint64

// pin opens a session of its own for a subscriptions/listen stream of
// owner, held (and counted against both tables) until drop, never
// evicted or expired; past owner's share of the listens, or with them
// full, it fails with a *caller.Refusal.
func (h *holder) pin(owner caller.ID, open func(*session)) *session {
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]*session{}
	}
	key := "listen/" + strconv.FormatUint(listens.Add(1), 10)
	s := &session{key: key, pinned: true, owner: owner, ready: make(chan struct{}), used: h.now()}
	if err := h.listens.Acquire(owner, nil); err != nil {
		h.mu.Unlock()
		s.err = err
		close(s.ready)
		return s
	}
	return h.add(s, open)
}

// add holds s, making room first, and opens it with open; h.mu is held on
// entry and released. Room is made by closing expired sessions, then
// idle ones least recently used first: the owner's own when it holds its
// share, anyone's when the table is full. A busy session (a request under
// way, a call waiting for input, a listen stream, one still opening) is
// never closed for another: when nothing else is left, s fails with the
// table's *caller.Refusal and is not held.
func (h *holder) add(s *session, open func(*session)) *session {
	dropped := h.expireLocked(s.used, nil)
	err := h.sessions.Acquire(s.owner, func(own bool) bool {
		victim := h.evictLRULocked(own, s.owner)
		if victim != nil {
			dropped = append(dropped, victim)
		}
		return victim != nil
	})
	if err != nil {
		if s.pinned {
			h.listens.Release(s.owner)
		}
		n := len(h.m)
		h.mu.Unlock()
		h.report(n, dropped)
		s.err = err
		close(s.ready)
		return s
	}
	h.m[s.key] = s
	n := len(h.m)
	h.mu.Unlock()
	h.report(n, dropped)
	open(s)
	close(s.ready)
	if s.err != nil || s.deny != nil {
		h.drop(s) // the next caller tries again
	}
	return s
}

// forgetLocked removes s from the map and gives back its places.
func (h *holder) forgetLocked(s *session) {
	delete(h.m, s.key)
	h.sessions.Release(s.owner)
	if s.pinned {
		h.listens.Release(s.owner)
	}
}

// drop forgets s (a session the upstream ended, or one that failed to
// open) if it is still the one held for its key.
func (h *holder) drop(s *session) {
	h.mu.Lock()
	var dropped []*session
	if h.m[s.key] == s {
		h.forgetLocked(s)
		if s.err == nil && s.deny == nil {
			dropped = append(dropped, s)
		}
	}
	n := len(h.m)
	h.mu.Unlock()
	h.report(n, dropped)
}

// sweep closes every session idle past the timeout.
func (h *holder) sweep() {
	h.mu.Lock()
	dropped := h.expireLocked(h.now(), nil)
	n := len(h.m)
	h.mu.Unlock()
	h.report(n, dropped)
}

// closeAll closes every session (shutdown).
func (h *holder) closeAll() {
	h.mu.Lock()
	var dropped []*session
	for _, s := range h.m {
		h.forgetLocked(s)
		dropped = append(dropped, s)
	}
	h.mu.Unlock()
	h.report(0, dropped)
}

func (h *holder) expireLocked(now time.Time, dropped []*session) []*session {
	for _, s := range h.m {
		select {
		case <-s.ready:
		default:
			continue // still opening
		}
		if !s.pinned && s.busy() == 0 && now.Sub(s.lastUsed()) > h.idle {
			h.forgetLocked(s)
			dropped = append(dropped, s)
		}
	}
	return dropped
}

// evictLRULocked drops the least recently used idle session (owner's
// own when own is set) and returns it; nil when every such session is
// busy: a stream of new credentials must not end other callers'
// requests, calls waiting for input or listen streams.
func (h *holder) evictLRULocked(own bool, owner caller.ID) *session {
	var oldest *session
	for _, s := range h.m {
		if s.pinned || s.busy() > 0 || (own && s.owner != owner) {
			continue
		}
		select {
		case <-s.ready:
		default:
			continue // still opening: its first caller waits on it
		}
		if oldest == nil || s.lastUsed().Before(oldest.lastUsed()) {
			oldest = s
		}
	}
	if oldest != nil {
		h.forgetLocked(oldest)
	}
	return oldest
}

// busy is how many of s's requests are under way or wait for input.
func (s *session) busy() int32 { return s.waiting.Load() + s.inflight.Load() }

func (h *holder) report(n int, dropped []*session) {
	if h.count != nil {
		h.count(n)
	}
	if h.closed == nil {
		return
	}
	for _, s := range dropped {
		go func() {
			<-s.ready
			if s.err == nil && s.deny == nil {
				h.closed(s)
			}
		}()
	}
}

func (h *holder) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}
