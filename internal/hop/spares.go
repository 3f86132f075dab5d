package hop

import (
	"context"
	"time"
)

// spareSet is one upstream address's spare connections: dialled ahead by
// refill, never used, so in no partition yet. Its fields are guarded by
// Transport.mu.
type spareSet struct {
	conns  []*conn            // newest last
	cancel context.CancelFunc // of the refill under way; nil when none runs
}

// takeSpare takes addr's newest spare, or returns nil. The newest is the
// one the upstream is least likely to have closed for idling; the oldest
// are left to expire.
func (t *Transport) takeSpare(addr string) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.spares[addr]
	if s == nil || len(s.conns) == 0 {
		return nil
	}
	c := s.conns[len(s.conns)-1]
	s.conns[len(s.conns)-1] = nil
	s.conns = s.conns[:len(s.conns)-1]
	if len(s.conns) == 0 && s.cancel == nil {
		delete(t.spares, addr) // no entry left for an address with no spares
	}
	c.spare = false
	c.stopTimer()
	return c
}

// refill starts topping addr's spares up to Spares, unless a refill for
// addr runs already or they are full. At most one refill per address runs
// at a time, and it dials one connection at a time.
//
// Only an address whose connections have gone back to the pool is topped
// up, and none while its refills are paused (spareDied): an upstream that
// closes idle connections sooner than spares wait closes them, the peek
// finds one closed, and no more are dialled for it for IdleTimeout.
func (t *Transport) refill(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.keptAlive[addr] || time.Now().Before(t.paused[addr]) {
		// Not an upstream that keeps connections open (yet), or one
		// whose spares die before they are used: see spareDied.
		return
	}
	s := t.spares[addr]
	if s == nil {
		s = &spareSet{}
		if t.spares == nil {
			t.spares = make(map[string]*spareSet)
		}
		t.spares[addr] = s
	}
	if s.cancel != nil || len(s.conns) >= t.Spares {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go t.fill(ctx, addr, s)
}

// fill dials spares for addr into s until s holds Spares of them. It stops
// at the first failed dial, without retrying: until the next miss asks for
// a refill, the spares stay as they are, so an upstream refusing
// connections sees at most one dial from here per request that missed.
// It stops too when CloseIdleConnections cancels ctx or has dropped s; a
// connection dialled after that is closed.
func (t *Transport) fill(ctx context.Context, addr string, s *spareSet) {
	timeout := t.IdleTimeout
	if timeout <= 0 {
		timeout = DefaultIdleTimeout
	}
	for {
		nc, err := t.dial(ctx, addr)
		t.mu.Lock()
		if ctx.Err() != nil || t.spares[addr] != s {
			t.mu.Unlock() // dropped: s.cancel is no longer ours to clear
			if err == nil {
				nc.Close()
			}
			return
		}
		if err != nil || len(s.conns) >= t.Spares {
			t.stopFill(addr, s)
			t.mu.Unlock()
			if err == nil {
				nc.Close()
			}
			return
		}
		c := newConn(nc, addr)
		c.spare, c.since = true, time.Now()
		c.timer = time.AfterFunc(timeout, func() { t.expire(c) })
		c.due = true
		s.conns = append(s.conns, c)
		if len(s.conns) >= t.Spares {
			t.stopFill(addr, s)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// spareDied pauses refills of addr for IdleTimeout: one of its spares was
// closed (or written on) by the upstream before it was used, so the upstream
// closes idle connections sooner than spares wait for a caller, and every
// spare dialled for it would be a connection dialled in vain.
func (t *Transport) spareDied(addr string) {
	timeout := t.IdleTimeout
	if timeout <= 0 {
		timeout = DefaultIdleTimeout
	}
	t.mu.Lock()
	if t.paused == nil {
		t.paused = make(map[string]time.Time)
	}
	t.paused[addr] = time.Now().Add(timeout)
	t.mu.Unlock()
}

// stopFill ends s's refill; t.mu must be held. A set left empty is dropped,
// so addresses nobody asks for any more leave no entry.
func (t *Transport) stopFill(addr string, s *spareSet) {
	s.cancel()
	s.cancel = nil
	if len(s.conns) == 0 {
		delete(t.spares, addr)
	}
}

// removeSpare takes c out of its spare set; t.mu must be held.
func (t *Transport) removeSpare(c *conn) bool {
	for addr, s := range t.spares {
		for i, x := range s.conns {
			if x != c {
				continue
			}
			last := len(s.conns) - 1
			copy(s.conns[i:], s.conns[i+1:])
			s.conns[last] = nil
			s.conns = s.conns[:last]
			c.spare = false
			if len(s.conns) == 0 && s.cancel == nil {
				delete(t.spares, addr)
			}
			return true
		}
	}
	return false
}

// dropSpares empties every spare set and cancels every refill under way,
// returning the spares for the caller to close; t.mu must be held.
func (t *Transport) dropSpares() []*conn {
	var all []*conn
	for addr, s := range t.spares {
		if s.cancel != nil {
			s.cancel()
			s.cancel = nil
		}
		for _, c := range s.conns {
			c.spare = false
			c.stopTimer()
		}
		all = append(all, s.conns...)
		delete(t.spares, addr)
	}
	return all
}

// IdleSpares reports how many spare connections the Transport holds, over
// all addresses.
func (t *Transport) IdleSpares() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.spares {
		n += len(s.conns)
	}
	return n
}

// filling reports whether a refill runs for any address, for tests.
func (t *Transport) filling() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.spares {
		if s.cancel != nil {
			return true
		}
	}
	return false
}
