package slotctx

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// A Context is judged by the context package's contract: Done closes and
// Err is context.Canceled once it is canceled; the functions registered
// on it, and every context made under it, follow; a stopped function
// never runs.
func TestAfterFuncStop(t *testing.T) {
	ctx := new(Context)
	ctx.Init(context.WithValue(context.Background(), http.LocalAddrContextKey, &net.TCPAddr{}))
	if ctx.Value(http.LocalAddrContextKey) == nil {
		t.Error("a value of the base context is lost")
	}
	var stoppedRan atomic.Bool
	ran := make(chan int, 8)
	stop := ctx.AfterFunc(func() { stoppedRan.Store(true) })
	for i := range 3 { // more than the two held without an allocation
		ctx.AfterFunc(func() { ran <- i })
	}
	if !stop() {
		t.Error("stop before the cancel: false, want true")
	}
	if stop() {
		t.Error("stop a second time: true, want false")
	}
	stopLate := ctx.AfterFunc(func() { ran <- 3 })
	ctx.Cancel()
	ctx.Cancel() // a second cancel is nothing
	seen := map[int]bool{}
	for range 4 {
		select {
		case i := <-ran:
			seen[i] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("functions run after the cancel: %v, want 0 to 3", seen)
		}
	}
	if stopLate() {
		t.Error("stop after its function started: true, want false")
	}
	select {
	case <-ctx.Done():
	default:
		t.Error("Done not closed after the cancel")
	}
	after := make(chan struct{})
	if ctx.AfterFunc(func() { close(after) })() {
		t.Error("stop of a function registered after the cancel: true, want false")
	}
	select {
	case <-after:
	case <-time.After(5 * time.Second):
		t.Error("a function registered after the cancel did not run")
	}
	child, release := context.WithCancel(ctx)
	defer release()
	if !errors.Is(child.Err(), context.Canceled) {
		t.Errorf("a child made after the cancel: Err %v", child.Err())
	}
	time.Sleep(50 * time.Millisecond)
	if stoppedRan.Load() {
		t.Error("a stopped function ran")
	}
}

// The slot API: a function registered by slot runs at the cancel unless
// its slot was stopped first; a slot stops once; one registered after the
// cancel runs at once and cannot be stopped; AfterFunc's stop and a slot
// do not touch each other's functions.
func TestAfterFuncSlot(t *testing.T) {
	ctx := new(Context)
	ctx.Init(context.Background())
	var stoppedRan atomic.Bool
	ran := make(chan string, 8)
	stopped, ok := ctx.AfterFuncSlot(func() { stoppedRan.Store(true) })
	if !ok {
		t.Fatal("AfterFuncSlot: not ok")
	}
	kept, _ := ctx.AfterFuncSlot(func() { ran <- "kept" })
	stopHook := ctx.AfterFunc(func() { ran <- "hook" })
	third, _ := ctx.AfterFuncSlot(func() { ran <- "third" }) // past the two held without an allocation
	if stopped == kept || kept == third || stopped == third {
		t.Fatalf("slots %d, %d, %d: not distinct", stopped, kept, third)
	}
	if !ctx.StopSlot(stopped) {
		t.Error("StopSlot before the cancel: false, want true")
	}
	if ctx.StopSlot(stopped) {
		t.Error("StopSlot a second time: true, want false")
	}
	ctx.Cancel()
	seen := map[string]bool{}
	for range 3 {
		select {
		case s := <-ran:
			seen[s] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("functions run after the cancel: %v, want kept, hook, third", seen)
		}
	}
	if ctx.StopSlot(kept) || stopHook() {
		t.Error("a stop after its function started: true, want false")
	}
	late, ok := ctx.AfterFuncSlot(func() { ran <- "late" })
	if !ok || ctx.StopSlot(late) {
		t.Errorf("registered after the cancel: ok %v, then stopped", ok)
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Error("a function registered after the cancel did not run")
	}
	time.Sleep(50 * time.Millisecond)
	if stoppedRan.Load() {
		t.Error("a stopped function ran")
	}
}

// waitDone waits (a bound far above what it takes) for ctx to be done.
func waitDone(t *testing.T, what string, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not done", what)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("%s: Err %v, want context.Canceled", what, ctx.Err())
	}
}

// notDone says whether ctx stays not done for a while.
func notDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(50 * time.Millisecond):
		return ctx.Err() == nil
	}
}

// parents are the kinds of parent Watch meets: one that registers by
// slot (a request's context in package h1, passed on by package caller),
// a context package one, and one with the slot methods that declines.
func parents() map[string]func() (context.Context, func()) {
	return map[string]func() (context.Context, func()){
		"slot": func() (context.Context, func()) {
			p := new(Context)
			p.Init(context.Background())
			return p, p.Cancel
		},
		"context package": func() (context.Context, func()) {
			return context.WithCancel(context.Background())
		},
		"slot method that declines": func() (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			return declines{ctx}, cancel
		},
	}
}

// declines has the slot methods but registers nothing, as package
// caller's Bound over a context without them (net/http's server's).
type declines struct{ context.Context }

func (declines) AfterFuncSlot(func()) (int, bool) { return 0, false }
func (declines) StopSlot(int) bool                { return false }

// TestWatch: a watched parent's cancellation cancels the context, and what
// hangs on it; one already done cancels it at once; its own Cancel does
// not touch the parent; after Unwatch the parent's cancellation reaches
// nothing.
func TestWatch(t *testing.T) {
	for name, parent := range parents() {
		t.Run(name, func(t *testing.T) {
			p, cancelParent := parent()
			c := new(Context)
			c.Init(p)
			c.Watch()
			ran := make(chan struct{})
			if _, ok := c.AfterFuncSlot(func() { close(ran) }); !ok {
				t.Fatal("AfterFuncSlot: not ok")
			}
			child, release := context.WithCancel(c)
			defer release()
			if !notDone(c) {
				t.Fatal("done before anything was canceled")
			}
			cancelParent()
			waitDone(t, "after the parent's cancel", c)
			waitDone(t, "a child", child)
			select {
			case <-ran:
			case <-time.After(5 * time.Second):
				t.Error("a function registered by slot did not run at the parent's cancel")
			}

			// A parent done already: c is done when Watch returns, as a
			// context.WithCancel child is, so no call starts under it.
			p, cancelParent = parent()
			cancelParent()
			c = new(Context)
			c.Init(p)
			c.Watch()
			if !errors.Is(c.Err(), context.Canceled) {
				t.Errorf("watching a parent already done: Err %v when Watch returned, want context.Canceled", c.Err())
			}

			p, cancelParent = parent()
			defer cancelParent()
			c = new(Context)
			c.Init(p)
			c.Watch()
			c.Cancel()
			waitDone(t, "after its own Cancel", c)
			if p.Err() != nil {
				t.Errorf("the context's Cancel reached the parent: %v", p.Err())
			}

			p, cancelParent = parent()
			c = new(Context)
			c.Init(p)
			c.Watch()
			c.Unwatch()
			cancelParent()
			if !notDone(c) {
				t.Error("after Unwatch, the parent's cancel still canceled the context")
			}
		})
	}
}

// TestWatchAllocations: a call's context, kept in a value its owner has,
// under a request's context, with the upstream transport's watch on it:
// one allocation, the function Watch registers.
func TestWatchAllocations(t *testing.T) {
	p := new(Context)
	p.Init(context.Background())
	var c Context
	closer := func() {}
	n := testing.AllocsPerRun(100, func() {
		c.Init(p)
		c.Watch()
		slot, _ := c.AfterFuncSlot(closer)
		c.StopSlot(slot)
		c.Unwatch()
		c.Cancel()
	})
	if n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

// TestValueAndDeadline are the parent's.
func TestValueAndDeadline(t *testing.T) {
	type key struct{}
	at := time.Now().Add(time.Hour)
	p, release := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), at)
	defer release()
	var c Context
	c.Init(p)
	if v := c.Value(key{}); v != "v" {
		t.Errorf("Value = %v, want the parent's", v)
	}
	if d, ok := c.Deadline(); !ok || !d.Equal(at) {
		t.Errorf("Deadline = %v, %v; want the parent's", d, ok)
	}
}

// TestWatchTakesTheParentsErr: a context that ends with its parent says
// why as the parent does, context.DeadlineExceeded for a deadline passed,
// at once for a parent done already and when the deadline passes later.
func TestWatchTakesTheParentsErr(t *testing.T) {
	past, release := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer release()
	var c Context
	c.Init(past)
	c.Watch()
	if err := c.Err(); err != context.DeadlineExceeded {
		t.Errorf("a parent past its deadline: Err %v when Watch returned, want context.DeadlineExceeded", err)
	}
	soon, release2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer release2()
	var d Context
	d.Init(soon)
	d.Watch()
	select {
	case <-d.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not done after the parent's deadline")
	}
	if err := d.Err(); err != context.DeadlineExceeded {
		t.Errorf("a parent whose deadline passed: Err %v, want context.DeadlineExceeded", err)
	}
}

// TestCauseAsWithCancel holds context.Cause of a Context, and of a
// context made under it, to what the context package's own WithCancel
// gives under the same parent after the same events: nil before a cancel,
// context.Canceled after its own, the parent's cause after the parent's.
// net/http's Transport returns context.Cause of a request's context as
// the error of a canceled round trip. One case differs, as Context says:
// canceled first, then its parent with a cause of its own.
func TestCauseAsWithCancel(t *testing.T) {
	why := errors.New("the parent's own reason")
	type parent struct {
		name string
		// make returns a fresh parent and its cancel, nil if it has none;
		// cause says whether that cancel gives a cause of its own.
		make  func() (context.Context, func())
		cause bool
	}
	parents := []parent{
		{"background", func() (context.Context, func()) { return context.Background(), nil }, false},
		{"WithCancel", func() (context.Context, func()) {
			return context.WithCancel(context.Background())
		}, false},
		{"WithCancelCause", func() (context.Context, func()) {
			p, cancel := context.WithCancelCause(context.Background())
			return p, func() { cancel(why) }
		}, true},
		{"a Context watching WithCancelCause", func() (context.Context, func()) {
			pp, cancel := context.WithCancelCause(context.Background())
			p := new(Context)
			p.Init(pp)
			p.Watch()
			return p, func() { cancel(why) }
		}, true},
	}
	type step struct {
		name          string
		own, byParent bool // canceled by its own cancel, then by the parent's
	}
	steps := []step{
		{"nothing", false, false},
		{"its own cancel", true, false},
		{"the parent's cancel", false, true},
		{"its own cancel, then the parent's", true, true},
	}
	// events cancels as s says, waiting after each cancel for c and child
	// to be done: a cancel reaches a context made under one of this
	// package's in a goroutine of its own.
	events := func(s step, own, byParent func(), c, child context.Context) {
		if s.own {
			own()
			settled(t, c, child)
		}
		if s.byParent {
			byParent()
			settled(t, c, child)
		}
	}
	for _, p := range parents {
		for _, s := range steps {
			rp, rcancel := p.make()
			gp, gcancel := p.make()
			if s.byParent && rcancel == nil {
				continue
			}
			// The reference: the context package's WithCancel.
			ref, refCancel := context.WithCancel(rp)
			refChild, refChildCancel := context.WithCancel(ref)
			events(s, refCancel, rcancel, ref, refChild)
			want, wantChild := context.Cause(ref), context.Cause(refChild)
			if s.own && s.byParent && p.cause {
				want = why // the one case that differs, as Context says
			}

			c := new(Context)
			c.Init(gp)
			c.Watch()
			child, childCancel := context.WithCancel(c)
			events(s, c.Cancel, gcancel, c, child)
			if got := context.Cause(c); got != want {
				t.Errorf("%s, %s: context.Cause = %v, want %v", p.name, s.name, got, want)
			}
			if got := context.Cause(child); got != wantChild {
				t.Errorf("%s, %s: context.Cause of a context made under it = %v, want %v", p.name, s.name, got, wantChild)
			}
			for _, end := range []func(){refChildCancel, refCancel, childCancel, c.Unwatch, c.Cancel, rcancel, gcancel} {
				if end != nil {
					end()
				}
			}
		}
	}
}

// settled waits (a bound far above what it takes) for a context and one
// made under it to be done.
func settled(t *testing.T, c, child context.Context) {
	t.Helper()
	for _, x := range []context.Context{c, child} {
		select {
		case <-x.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("not done 5 s after a cancel")
		}
	}
}
