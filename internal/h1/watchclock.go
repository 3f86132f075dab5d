package h1

import (
	"sync"
	"sync/atomic"
	"time"
)

// watchClock is the server's one timer for the watch delay. Each request,
// as it starts, tells it when it will have run for watchDelay; the timer
// fires at the earliest such time, and then every connection whose
// request has run that long is due its watcher, and the timer is set again
// for the next request that has not (Server.sweep). A timer per
// connection fired once per watchDelay on every busy connection, and each
// firing started a goroutine and woke the runtime's system monitor (128 a
// second at 32 busy connections, about 2% of the sidecar's CPU); the one
// timer fires about once per watchDelay however many are busy.
type watchClock struct {
	due    atomic.Int64 // when the timer fires (clockNanos); 0 when it is not set
	mu     sync.Mutex   // serialises setting the timer
	timer  *time.Timer
	sweeps atomic.Int64 // how often it fired, for the tests
}

// clockEpoch is the origin of clockNanos.
var clockEpoch = time.Now()

// clockNanos is t on the monotonic clock, in nanoseconds since the
// process's start, and never 0.
func clockNanos(t time.Time) int64 { return int64(t.Sub(clockEpoch)) + 1 }

// sweepEvery is the least time between two sweeps: with many slow
// requests starting one after another, a sweep per request would look at
// every connection each time. A request is watched at most this much after
// it has run for watchDelay.
const sweepEvery = watchDelay / 8

// armWatch has the clock fire by at (clockNanos).
func (s *Server) armWatch(at int64) {
	w := &s.watches
	if d := w.due.Load(); d != 0 && d <= at {
		return // it fires by then, and that sweep sets it again for at
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.due.Load(); d != 0 && d <= at {
		return
	}
	w.due.Store(at)
	wait := time.Duration(at - clockNanos(time.Now()))
	if w.timer == nil {
		w.timer = time.AfterFunc(wait, s.sweep)
		return
	}
	w.timer.Reset(wait)
}

// sweep is the clock's: every request that has run for watchDelay is due
// its watcher; the clock is set again for the earliest one that has not.
// The clock is cleared before the connections are looked at, so a request
// that starts meanwhile either sees it cleared and sets it, or is seen.
func (s *Server) sweep() {
	w := &s.watches
	w.sweeps.Add(1)
	w.mu.Lock()
	w.due.Store(0)
	w.mu.Unlock()
	now := clockNanos(time.Now())
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var next int64
	for _, c := range conns {
		c.mu.Lock()
		if c.cur != nil && !c.hijacked && !c.wantWatch {
			if c.watchAt <= now {
				c.wantWatch = true
				c.armLocked()
			} else if next == 0 || c.watchAt < next {
				next = c.watchAt
			}
		}
		c.mu.Unlock()
	}
	if next != 0 {
		s.armWatch(max(next, now+int64(sweepEvery)))
	}
}
