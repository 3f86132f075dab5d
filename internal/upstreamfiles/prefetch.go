package upstreamfiles

import (
	"context"
	"net/http"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// Prefetch at the handshake. A client that declares the skills extension
// in its server/discover request (2026-07-28: _meta's clientCapabilities,
// extensions["io.modelcontextprotocol/skills"]) is about to list skills.
// When its authorization context has learned nothing yet, the overlay
// starts that context's discovery as the request passes through, with the
// caller's headers, and resolves the first skills/list page's files in the
// background (the reads of the files its listings serve), so that by the
// time the client's skills/list arrives the page is warm, or waits only
// for what is left of the discovery it shares.
//
// What it learns is the caller's own: the listings and reads are made with
// the caller's headers and cached under its credentials, and a page is
// answered only after the gate admits the caller. The gate may cache an
// admission from the prefetch's first listing (as on a first page; no
// verdict is counted for it, since the sidecar forwards the handshake),
// so a client that never lists skills leaves that cached for the gate's
// TTL. A refused or failed prefetch leaves no context behind, and a
// request waiting on its discovery when it fails or runs out of time runs
// its own. The cost is one discovery (and the first page's reads of served
// files) per new context that performs a handshake declaring the
// extension, within the bound of discoveries in flight; at most
// maxPrefetches run at once and a handshake past that starts none.
//
// On the legacy wire the listings need the session, which only the
// initialize reply creates, and a server may refuse requests before the
// client's notifications/initialized: so an initialize declaring the
// extension (params.capabilities.extensions) that the upstream answered
// with a result is noted for its authorization context (at most
// maxContexts notes, declaredTTL each), and the prefetch starts when a
// notifications/initialized of that context has been answered 202 (the
// proxy's Notified hook), in that notification's session. A context is
// credentials and network identity, not a session: when one client opens
// two sessions at once, the prefetch may run in the other one, which
// costs the declaring session the gate's probe on its first page, nothing
// else.

// Bounds of the prefetch.
const (
	// maxPrefetches is how many prefetches run at once in the sidecar.
	maxPrefetches = DefaultMaxDiscoveries
)

// declaredTTL is how long a legacy initialize's declaration waits for
// its notifications/initialized.
const declaredTTL = 30 * time.Second

// prefetchTimeout bounds one prefetch, which outlives the request that
// started it (a variable only so that a test can shorten it).
var prefetchTimeout = 30 * time.Second

// NoteDeclared notes that a legacy client of r's context declared the
// extension in an initialize the upstream answered with a result.
func (o *Overlay) NoteDeclared(r *http.Request) { o.noteDeclared(o.authKey(r)) }

// TakeDeclared reports, once, whether r's context's client declared the
// extension in an initialize within declaredTTL.
func (o *Overlay) TakeDeclared(r *http.Request) bool { return o.takeDeclared(o.authKey(r)) }

// noteDeclared notes that a legacy client of context key declared the
// extension in its initialize.
func (o *Overlay) noteDeclared(key string) {
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.declared) >= maxContexts {
		for k, exp := range o.declared {
			if now.After(exp) {
				delete(o.declared, k) // a walk only when full
			}
		}
	}
	if o.declared == nil || len(o.declared) >= maxContexts {
		o.declared = map[string]time.Time{} // the cost of a full set is a prefetch not made
	}
	o.declared[key] = now.Add(declaredTTL)
}

// takeDeclared reports, once, whether context key's client declared the
// extension in an initialize within declaredTTL.
func (o *Overlay) takeDeclared(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	exp, ok := o.declared[key]
	delete(o.declared, key)
	return ok && o.now().Before(exp)
}

// Prefetch runs run in the background, with a copy of r detached from r's
// end (bounded by prefetchTimeout), when r's context has learned nothing
// for snap, the upstream may serve resources, and fewer than
// maxPrefetches run; otherwise it does nothing.
func (o *Overlay) Prefetch(r *http.Request, snap *catalog.Snapshot, run func(detached *http.Request)) {
	if o.resourcesCap.Load() == capNone {
		return
	}
	if o.learning(o.authKey(r), snap) {
		return
	}
	select {
	case o.prefetches <- struct{}{}:
	default:
		return // a flood of handshakes starts no more than maxPrefetches
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), prefetchKey{}, true), prefetchTimeout)
	detached := r.Clone(ctx) // the caller's headers and address; the request may end first
	go func() {
		defer func() {
			cancel()
			<-o.prefetches
		}()
		run(detached)
	}()
}

// prefetchKey marks the context of a prefetch's requests.
type prefetchKey struct{}

// prefetching reports whether r is a prefetch's (whose verdicts the gate
// does not count: Overlay.Witness).
func prefetching(r *http.Request) bool { return r.Context().Value(prefetchKey{}) != nil }

// learning reports whether the context of key has learned anything for
// snap, or is learning it, without making an entry for it.
func (o *Overlay) learning(key string, snap *catalog.Snapshot) bool {
	now := o.now()
	o.mu.Lock()
	c := o.contexts[key]
	o.mu.Unlock()
	if !c.current(snap, now) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.disc != nil || len(c.files) > 0
}

// dropIfEmpty forgets c, the context of key, when it is still key's and
// holds nothing (its discovery failed or was withdrawn and no verdict was
// stored), so refused callers (junk credentials, each a new context) leave
// no entries pushing others out of the cache.
func (o *Overlay) dropIfEmpty(key string, c *authContext) {
	c.mu.Lock()
	empty := c.disc == nil && len(c.files) == 0 && len(c.reading) == 0
	c.mu.Unlock()
	if !empty {
		return
	}
	o.mu.Lock()
	if o.contexts[key] == c {
		delete(o.contexts, key)
	}
	o.mu.Unlock()
}
