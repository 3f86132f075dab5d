package bridge

import (
	"encoding/hex"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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
// authorization context and client-capability set.
type session struct {
	key     string
	id      string // Mcp-Session-Id; "" when the upstream minted none
	version string // the negotiated protocol version
	init    initResult
	url     string      // the upstream endpoint, for DELETE
	creds   http.Header // the credentials it was opened with, for DELETE

	ready chan struct{} // closed when opened (or failed)
	err   error
	deny  *refusal // the upstream's refusal of initialize, passed on

	mu   sync.Mutex
	used time.Time
	// waiting counts the calls on it waiting for a client's retry
	// (input_required): eviction spares it while any do.
	waiting atomic.Int32
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

// holder keeps sessions by key, at most max, none idle longer than idle.
type holder struct {
	max  int
	idle time.Duration
	now  func() time.Time
	// closed is called (without the lock held) for every session dropped.
	closed func(*session)
	count  func(int)

	mu sync.Mutex
	m  map[string]*session
}

// get returns the session for key, opening it with open when there is
// none. Concurrent callers of one key wait for one open.
func (h *holder) get(key string, open func(*session)) *session {
	now := h.now()
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]*session{}
	}
	if s, ok := h.m[key]; ok {
		h.mu.Unlock()
		<-s.ready
		s.touch(now)
		return s
	}
	var dropped []*session
	dropped = h.expireLocked(now, dropped)
	for len(h.m) >= h.max {
		dropped = append(dropped, h.evictLRULocked())
	}
	s := &session{key: key, ready: make(chan struct{}), used: now}
	h.m[key] = s
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

// drop forgets s (a session the upstream ended, or one that failed to
// open) if it is still the one held for its key.
func (h *holder) drop(s *session) {
	h.mu.Lock()
	var dropped []*session
	if h.m[s.key] == s {
		delete(h.m, s.key)
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
	for k, s := range h.m {
		delete(h.m, k)
		dropped = append(dropped, s)
	}
	h.mu.Unlock()
	h.report(0, dropped)
}

func (h *holder) expireLocked(now time.Time, dropped []*session) []*session {
	for k, s := range h.m {
		select {
		case <-s.ready:
		default:
			continue // still opening
		}
		if now.Sub(s.lastUsed()) > h.idle {
			delete(h.m, k)
			dropped = append(dropped, s)
		}
	}
	return dropped
}

// evictLRULocked drops the least recently used session, sparing those
// with calls waiting for a client's retry unless every session has one: a
// stream of new credentials must not end other callers' pending calls.
func (h *holder) evictLRULocked() *session {
	spared := func(s *session) bool { return s.waiting.Load() > 0 }
	var oldest *session
	for _, s := range h.m {
		switch {
		case oldest == nil, spared(oldest) && !spared(s):
			oldest = s
		case spared(s) == spared(oldest) && s.lastUsed().Before(oldest.lastUsed()):
			oldest = s
		}
	}
	delete(h.m, oldest.key)
	return oldest
}

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
