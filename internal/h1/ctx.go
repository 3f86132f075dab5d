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
// caller that asserts the method (the upstream transport's watch of its
// connection) registers with one allocation, the stop function, where
// context.AfterFunc on a cancelCtx pays five.
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.fns == nil {
		c.fns = c.slot[:0]
	}
	i := len(c.fns)
	c.fns = append(c.fns, f)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		registered := c.fns[i] != nil
		c.fns[i] = nil
		return registered
	}
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
