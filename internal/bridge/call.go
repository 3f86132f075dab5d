package bridge

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
)

// The life of a request the bridge forwards on a held session. Its
// upstream request runs under a context of its own, not the client's: a
// call kept waiting for the client's input (mrtr.go) must outlive the
// client request that was answered input_required, and net/http cancels
// that request's context as soon as the reply is written. While a client
// waits on the call, its leaving is the call's cancellation (2026-07-28
// Streamable HTTP: closing the response stream cancels the request, and
// the server MUST treat it so); a legacy server reads a dropped stream as
// no cancellation (its client sends notifications/cancelled), so the
// bridge closes the upstream stream and sends the legacy server that
// notification, naming the request by the id the bridge gave it.
//
// Each request on a held session goes with an id of the bridge's own
// (upstreamID, minted by package idmap as the stdio adapter's are): callers of one authorization context and capability set
// share a session, and each numbers its requests itself, so two in flight
// may carry the same id, which a legacy session refuses (ids are unique
// per session there). The reply gets the client's id back.

// callCtx is one forwarded request's context and the watch on the client
// waiting for it.
type callCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
	s      *session
	id     json.RawMessage // the upstream id; nil for a notification
	notify func(*session, json.RawMessage)

	mu       sync.Mutex
	stop     func() bool // ends the watch on the current client
	watching bool
	ended    bool
}

// newCall starts a forwarded request on s, watched for its client leaving:
// then it is cancelled, and notify is told (for a request). The session
// counts it in flight until end, and eviction spares the session meanwhile.
func newCall(client context.Context, s *session, id json.RawMessage, notify func(*session, json.RawMessage)) *callCtx {
	ctx, cancel := context.WithCancel(context.WithoutCancel(client))
	c := &callCtx{ctx: ctx, cancel: cancel, s: s, id: id, notify: notify}
	s.inflight.Add(1)
	c.follow(client)
	return c
}

// follow watches client (a retry's, for a call that waited for input).
// The watch before it must have been detached.
func (c *callCtx) follow(client context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.stop, c.watching = context.AfterFunc(client, c.left), true
}

// left is the watch firing: the client waiting on the call went away.
func (c *callCtx) left() {
	c.mu.Lock()
	if !c.watching || c.ended {
		c.mu.Unlock()
		return
	}
	c.watching = false
	c.mu.Unlock()
	c.cancel()
	if c.id != nil && c.notify != nil {
		c.notify(c.s, c.id)
	}
	c.end()
}

// detach ends the watch without ending the call (it waits for a retry, or
// its reply is whole): false when the client has left, and then the
// call's cancellation is under way.
func (c *callCtx) detach() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return !c.ended
	}
	if c.stop() {
		c.watching = false
		return true
	}
	return false // left runs, or is about to
}

// end finishes the call: no watch, no longer in flight, then the context
// cancelled (harmless once the reply was read), in that order: the
// cancellation is what the upstream sees, and by then the session must
// count the call as over. Calls after the first do nothing.
func (c *callCtx) end() {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	if c.watching {
		c.stop()
		c.watching = false
	}
	c.mu.Unlock()
	c.s.inflight.Add(-1)
	c.cancel()
}

// upstreamIDs mints the ids of the requests the bridge sends on held
// sessions (package idmap).
var upstreamIDs = idmap.NewMinter("bridge")

// upstreamID is a fresh id for a request on a held session.
func upstreamID() json.RawMessage { return upstreamIDs.Next() }

// cancelUpstream tells s's legacy server that the client of its request id
// left: notifications/cancelled (2025-11-25 basic/utilities/cancellation).
func (t *Transport) cancelUpstream(s *session, id json.RawMessage) {
	if s.url == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := t.postOn(ctx, s, idmap.Cancelled(id, "the client closed its stream")); err == nil {
		drain(resp)
	}
}
