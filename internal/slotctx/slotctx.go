// Package slotctx owns the sidecar's own cancelable context: one that
// lives inside a value its owner allocates anyway (a request's exchange in
// package h1, a call in the era bridge), is canceled by its owner and, when
// it watches its parent, by the parent's cancellation, and registers
// functions by slot, so that what hangs on it pays no allocation.
//
// The context package pays five allocations or more to register one
// function on a context made by WithCancel (the child context, its done
// channel, the parent's registration, the function's own context, a map
// of children). A Context pays none for a function registered by slot
// (AfterFuncSlot, what the upstream transport uses for its connection's
// watch), one for AfterFunc's stop function, and one to watch a parent.
// It has the AfterFunc method the context package looks for in a parent,
// so context.WithCancel, WithTimeout and AfterFunc made under it register
// on it.
package slotctx

import (
	"context"
	"sync"
	"time"
)

// Context is a context.Context canceled by Cancel, or by its parent's
// cancellation once Watch is called. Its zero value is unusable: Init it
// first. Deadline and Value are the parent's.
//
// context.Cause of a Context is what it is of one made by
// context.WithCancel under the same parent (TestCauseAsWithCancel), but in
// one case: canceled by Cancel and then its parent canceled with a cause
// of its own (context.WithCancelCause), it gives the parent's cause where
// WithCancel's gives context.Canceled, because Cause finds the nearest of
// the context package's own cancelable contexts through Value.
type Context struct {
	parent context.Context
	mu     sync.Mutex
	done   chan struct{} // made by the first Done, closed by Cancel
	err    error
	fns    []func() // registered; nil once started or stopped
	slot   [2]func()

	// The watch on the parent (Watch): its slot there, or its stop.
	watchOn   SlotAfterFuncer
	watchSlot int
	watchStop func() bool
}

// SlotAfterFuncer is a context that registers a function by slot and
// unregisters it by that slot, so that the stop function is the caller's
// own: Context does, and package caller's Bound passes the method on. The
// upstream transport (package hop) asserts it to watch its connection.
type SlotAfterFuncer interface {
	AfterFuncSlot(f func()) (slot int, ok bool)
	StopSlot(slot int) bool
}

// Init makes c a context under parent, not canceled, with nothing
// registered and no watch. c must not be in use.
func (c *Context) Init(parent context.Context) {
	*c = Context{parent: parent}
}

// closedChan is the Done of a context canceled before anyone asked.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

func (c *Context) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *Context) Value(key any) any { return c.parent.Value(key) }

func (c *Context) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *Context) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Context) String() string { return "slotctx.Context" }

// AfterFunc arranges to call f in its own goroutine once c is canceled, at
// once if it is already, as context.AfterFunc does; stop unregisters f and
// reports whether it did so before f was started.
func (c *Context) AfterFunc(f func()) (stop func() bool) {
	slot, _ := c.AfterFuncSlot(f)
	return func() bool { return c.StopSlot(slot) }
}

// AfterFuncSlot registers f as AfterFunc does and returns the slot that
// StopSlot takes to unregister it, so that a caller that keeps a stop
// function of its own registers with no allocation at all. ok is always
// true here: a context that passes the method on (package caller's) says
// false when the context it wraps has no such method.
func (c *Context) AfterFuncSlot(f func()) (slot int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return -1, true
	}
	if c.fns == nil {
		c.fns = c.slot[:0]
	}
	c.fns = append(c.fns, f)
	return len(c.fns) - 1, true
}

// StopSlot unregisters the function AfterFuncSlot registered in slot and
// reports whether it did so before the function was started, as the stop
// function of AfterFunc does.
func (c *Context) StopSlot(slot int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slot < 0 || slot >= len(c.fns) {
		return false
	}
	registered := c.fns[slot] != nil
	c.fns[slot] = nil
	return registered
}

// Cancel cancels c: Done closes, Err is context.Canceled, and every
// function still registered starts. Calls after the first do nothing.
func (c *Context) Cancel() { c.cancel(context.Canceled) }

// cancel cancels c with err as its Err (context.Canceled for nil).
func (c *Context) cancel(err error) {
	if err == nil {
		err = context.Canceled
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	for i, f := range c.fns {
		if f != nil {
			c.fns[i] = nil
			go f()
		}
	}
}

// Watch makes the parent's cancellation cancel c, with the parent's Err
// (context.DeadlineExceeded when its deadline passed): by slot where the
// parent registers so, else by context.AfterFunc. A parent done already
// cancels c before Watch returns, as context.WithCancel does, so nothing
// made under c starts. One allocation, the function registered. Call it
// once, after Init and before c is in use; Unwatch ends the watch.
func (c *Context) Watch() {
	if err := c.parent.Err(); err != nil {
		c.cancel(err)
		return
	}
	follow := func() { c.cancel(c.parent.Err()) }
	if a, ok := c.parent.(SlotAfterFuncer); ok {
		if slot, ok := a.AfterFuncSlot(follow); ok {
			c.watchOn, c.watchSlot = a, slot
			if slot < 0 { // the parent ended between the two looks
				follow()
			}
			return
		}
	}
	c.watchStop = context.AfterFunc(c.parent, follow)
	if c.parent.Err() != nil {
		follow()
	}
}

// Unwatch ends Watch's watch on the parent, so that a parent that lives
// on (a client's request whose call is over) keeps nothing of c. Without
// a watch it does nothing.
func (c *Context) Unwatch() {
	switch {
	case c.watchOn != nil:
		c.watchOn.StopSlot(c.watchSlot)
	case c.watchStop != nil:
		c.watchStop()
	}
}
