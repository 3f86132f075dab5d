package methods

import (
	"context"
	"net/http"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
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

// declaresSkills reports whether a 2026-07-28 request's client declares
// the skills extension.
func declaresSkills(msg rewrite.Message) bool {
	_, ok := rewrite.GetKey(msg.Params, []string{"_meta", metaClientCaps, "extensions", rewrite.SkillsExtensionID})
	return ok
}

// declaresSkillsLegacy reports whether a legacy initialize's client
// declares the skills extension.
func declaresSkillsLegacy(msg rewrite.Message) bool {
	_, ok := rewrite.GetKey(msg.Params, []string{"capabilities", "extensions", rewrite.SkillsExtensionID})
	return ok
}

// handshake is what EditReply does for a handshake request passing
// through: a modern server/discover declaring the extension starts the
// prefetch.
func (h *Handler) handshake(r *http.Request, msg rewrite.Message) {
	if h.opts.Overlay != nil && msg.Method == "server/discover" && declaresSkills(msg) {
		h.prefetch(r, msg, true)
	}
}

// handshakeAnswered sees the upstream's reply to a handshake: a legacy
// initialize declaring the extension that the upstream answered with a
// result is noted for its context's notifications/initialized (Notified);
// a refused one notes nothing.
func (h *Handler) handshakeAnswered(r *http.Request, msg rewrite.Message, reply []byte) {
	o := h.opts.Overlay
	if o == nil || msg.Method != "initialize" || !declaresSkillsLegacy(msg) {
		return
	}
	if _, ok := rewrite.GetKey(reply, []string{"result"}); ok {
		o.noteDeclared(o.authKey(r))
	}
}

// Notified implements proxy.Notified: a legacy client's
// notifications/initialized, accepted by the upstream, after an
// initialize that declared the extension starts its prefetch.
func (h *Handler) Notified(r *http.Request, msg rewrite.Message) {
	o := h.opts.Overlay
	if o == nil || msg.Method != "notifications/initialized" || !o.takeDeclared(o.authKey(r)) {
		return
	}
	h.prefetch(r, msg, false)
}

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

// prefetch starts the discovery and first page of r's context, for a
// client of the era modern says, when the context has learned nothing.
func (h *Handler) prefetch(r *http.Request, msg rewrite.Message, modern bool) {
	o := h.opts.Overlay
	if o.resourcesCap.Load() == capNone {
		return
	}
	if h.opts.Serves != nil && !h.opts.Serves(modern) {
		return // the sidecar answers no skills/list on this wire
	}
	v := h.current()
	if v.snap == nil || len(v.skillURIs) == 0 {
		return
	}
	key := o.authKey(r)
	if o.learning(key, v.snap) {
		return
	}
	select {
	case o.prefetches <- struct{}{}:
	default:
		return // a flood of handshakes starts no more than maxPrefetches
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), prefetchKey{}, true), prefetchTimeout)
	detached := r.Clone(ctx) // the caller's headers and address; the request may end first
	unknownOK := h.catalogOutlivesUpstream()
	go func() {
		defer func() {
			cancel()
			<-o.prefetches
		}()
		from, to, _ := page(v.skillURIs, "", false, h.opts.PageSize)
		_, _, _, _ = o.entries(detached, msg, v, from, to, unknownOK) // a failure leaves no entry behind
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
