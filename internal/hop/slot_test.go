package hop

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"
)

// slotCtx is a context that registers functions by slot (AfterFuncSlot,
// StopSlot), as the sidecar's server's request contexts do: a function
// registered runs once cancel is called, unless its slot was stopped
// first. It counts what goes through each method.
type slotCtx struct {
	context.Context
	cancelInner context.CancelFunc

	mu                     sync.Mutex
	fns                    []func()
	canceled               bool
	slotted, stopped, hook int
}

func newSlotCtx() *slotCtx {
	inner, cancel := context.WithCancel(context.Background())
	return &slotCtx{Context: inner, cancelInner: cancel}
}

func (s *slotCtx) AfterFuncSlot(f func()) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slotted++
	if s.canceled {
		go f()
		return -1, true
	}
	s.fns = append(s.fns, f)
	return len(s.fns) - 1, true
}

func (s *slotCtx) StopSlot(slot int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slot < 0 || s.fns[slot] == nil {
		return false
	}
	s.fns[slot] = nil
	s.stopped++
	return true
}

// AfterFunc is there to be left alone: a transport that registers by slot
// has no use for it.
func (s *slotCtx) AfterFunc(f func()) func() bool {
	s.mu.Lock()
	s.hook++
	s.mu.Unlock()
	return context.AfterFunc(s.Context, f)
}

func (s *slotCtx) cancel() {
	s.mu.Lock()
	s.canceled = true
	fns := s.fns
	s.fns = make([]func(), len(fns))
	s.mu.Unlock()
	s.cancelInner()
	for _, f := range fns {
		if f != nil {
			go f()
		}
	}
}

func (s *slotCtx) counts() (slotted, stopped, hook int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slotted, s.stopped, s.hook
}

// TestCancelThroughAfterFuncSlot: on a context that registers by slot the
// connection's watch registers there, once, and cancelling the context
// still closes the connection under a waiting round trip.
func TestCancelThroughAfterFuncSlot(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			close(arrived)
			select { // bounded: a cancel that closes nothing fails, not hangs
			case <-release:
			case <-time.After(5 * time.Second):
			}
		}
		io.WriteString(w, "ok")
	}))
	defer close(release)
	tr := newTransport(t)
	// A first round trip on another context leaves the connection pooled
	// with its stop called: the second, on the same connection, must
	// still be watched.
	do(t, tr, get(t, srv.URL).WithContext(newSlotCtx()))
	ctx := newSlotCtx()
	go func() { <-arrived; ctx.cancel() }()
	_, err := tr.RoundTrip(get(t, srv.URL+"/wait").WithContext(ctx))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want the first one reused", n)
	}
	if slotted, _, hook := ctx.counts(); slotted != 1 || hook != 0 {
		t.Fatalf("%d registrations by slot and %d by AfterFunc, want 1 and 0", slotted, hook)
	}
	if n := tr.Idle(); n != 0 {
		t.Fatalf("pool holds %d connections after a cancelled request, want 0", n)
	}
}

// TestSlotStoppedWithTheReply: a round trip done stops its slot, so that
// cancelling the context afterwards closes nothing, and the connection,
// back in the pool, no longer holds the context.
func TestSlotStoppedWithTheReply(t *testing.T) {
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	tr := newTransport(t)
	ctx := newSlotCtx()
	do(t, tr, get(t, srv.URL).WithContext(ctx))
	if slotted, stopped, hook := ctx.counts(); slotted != 1 || stopped != 1 || hook != 0 {
		t.Fatalf("%d registered by slot, %d stopped, %d by AfterFunc: want 1, 1, 0", slotted, stopped, hook)
	}
	ctx.cancel()
	time.Sleep(50 * time.Millisecond) // a function wrongly left registered runs by then
	do(t, tr, get(t, srv.URL))
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections for two requests, want 1", n)
	}

	// A context whose round trip is over is not kept alive by the pooled
	// connection (a client's request, held by its context, would be).
	gone := weak.Make(doOnFreshCtx(t, tr, srv.URL))
	for range 5 {
		runtime.GC()
		if gone.Value() == nil {
			break
		}
	}
	if gone.Value() != nil {
		t.Fatal("the pooled connection still holds the context of a finished round trip")
	}
	if n := tr.Idle(); n != 1 {
		t.Fatalf("pool holds %d connections, want the one", n)
	}
}

// doOnFreshCtx does a round trip on a context of its own and returns it.
func doOnFreshCtx(t *testing.T, tr *Transport, url string) *slotCtx {
	ctx := newSlotCtx()
	do(t, tr, get(t, url).WithContext(ctx))
	return ctx
}
