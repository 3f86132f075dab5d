package h1

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// A request's context is judged by the context package's contract: Done
// closes and Err is context.Canceled once the handler returns or the
// client goes away; context.AfterFunc's function, the AfterFunc method's
// and every context made under it (WithCancel, WithTimeout) follow; a
// stopped function never runs.

// afterFuncer is the method the context package looks for in a parent.
type afterFuncer interface {
	AfterFunc(func()) func() bool
}

// watched is everything a handler hangs on its request's context.
type watched struct {
	ctx                 context.Context
	done                <-chan struct{}
	child, timed        context.Context
	byMethod, byPackage chan struct{}
	early               error // Err while the handler ran
	release             []context.CancelFunc
}

func watch(r *http.Request) *watched {
	ctx := r.Context()
	w := &watched{ctx: ctx, done: ctx.Done(), byMethod: make(chan struct{}), byPackage: make(chan struct{}), early: ctx.Err()}
	var c1, c2 context.CancelFunc
	w.child, c1 = context.WithCancel(ctx)
	w.timed, c2 = context.WithTimeout(ctx, time.Hour)
	w.release = []context.CancelFunc{c1, c2}
	if a, ok := ctx.(afterFuncer); ok {
		a.AfterFunc(func() { close(w.byMethod) })
	} else {
		close(w.byMethod) // judged below: the method is what the transport asserts
	}
	context.AfterFunc(ctx, func() { close(w.byPackage) })
	return w
}

// ended waits (a bound far above what it takes) for every part of w to
// see the cancellation and says what did not.
func (w *watched) ended(t *testing.T) {
	t.Helper()
	defer func() {
		for _, f := range w.release {
			f()
		}
	}()
	for name, ch := range map[string]<-chan struct{}{"Done": w.done, "AfterFunc method": w.byMethod,
		"context.AfterFunc": w.byPackage, "WithCancel child": w.child.Done(), "WithTimeout child": w.timed.Done()} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Errorf("%s: not ended", name)
		}
	}
	if w.early != nil {
		t.Errorf("Err while the handler ran: %v", w.early)
	}
	if err := w.ctx.Err(); err != context.Canceled {
		t.Errorf("Err %v, want context.Canceled", err)
	}
	if err := context.Cause(w.child); err != context.Canceled {
		t.Errorf("child's cause %v, want context.Canceled", err)
	}
}

func TestRequestContextEndsWhenHandlerReturns(t *testing.T) {
	got := make(chan *watched, 1)
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().(afterFuncer); !ok {
			t.Error("the request's context has no AfterFunc method")
		}
		got <- watch(r)
	}))
	c, br := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readReply(t, br, "GET")
	(<-got).ended(t)
}

func TestRequestContextEndsWhenClientGoes(t *testing.T) {
	got := make(chan *watched, 1)
	_, addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		x := watch(r)
		select { // the handler does not return until the client's leaving ends it
		case <-x.byPackage:
		case <-time.After(5 * time.Second):
			t.Error("the context did not end while the handler ran")
		}
		got <- x
	}))
	c, _ := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	time.Sleep(2 * watchDelay)
	c.Close()
	(<-got).ended(t)
}
