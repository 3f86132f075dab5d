package h1

import (
	"context"
	"sync"
	"time"
)

// reqCtx is a request's context: the connection's base context (which is
// never done), canceled when the handler returns or the client goes away.
// It lives in the exchange, so a request pays no allocation for it, and it
// has the AfterFunc method the context package looks for in a parent:
// context.AfterFunc, WithCancel and WithTimeout register on it, and a
// caller that asserts the method registers with one allocation, the stop
// function, where context.AfterFunc on a cancelCtx pays five; one that
// asserts AfterFuncSlot (the upstream transport's watch of its
// connection) with none.
type reqCtx struct {
	base context.Context
	mu   sync.Mutex
	done chan struct{} // made by the first Done, closed by cancel
	err  error
	fns  []func() // registered by AfterFunc; nil once started or stopped
	slot [2]func()
}

// closedChan is the Done of a context canceled before anyone asked.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

func (c *reqCtx) Deadline() (time.Time, bool) { return c.base.Deadline() }

func (c *reqCtx) Value(key any) any { return c.base.Value(key) }

func (c *reqCtx) Done() <-chan struct{} {
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

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *reqCtx) String() string { return "h1.requestContext" }

// AfterFunc arranges to call f in its own goroutine once c is canceled, at
// once if it is already, as context.AfterFunc does; stop unregisters f and
// reports whether it did so before f was started.
func (c *reqCtx) AfterFunc(f func()) (stop func() bool) {
	slot, _ := c.AfterFuncSlot(f)
	return func() bool { return c.StopSlot(slot) }
}

// AfterFuncSlot registers f as AfterFunc does and returns the slot that
// StopSlot takes to unregister it, so that a caller that keeps a stop
// function of its own (the upstream transport's, made once per
// connection) registers with no allocation at all. ok is always true
// here: a context that passes the method on (package caller's) says false
// when the context it wraps has no such method.
func (c *reqCtx) AfterFuncSlot(f func()) (slot int, ok bool) {
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
func (c *reqCtx) StopSlot(slot int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slot < 0 || slot >= len(c.fns) {
		return false
	}
	registered := c.fns[slot] != nil
	c.fns[slot] = nil
	return registered
}

// cancel cancels c: Done closes, Err is context.Canceled, and every
// function still registered starts.
func (c *reqCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = context.Canceled
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
