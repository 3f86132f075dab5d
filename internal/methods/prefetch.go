package methods

import (
	"context"
	"net/http"
	"time"

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
// Nothing is published or admitted that would not be otherwise: the
// listings and reads are the caller's own, cached under its credentials,
// and a page is answered only after the gate admits the caller (whom the
// first listing's result may admit, as on a first page). A refused or
// failed discovery is not kept. The cost is one discovery (and the first
// page's reads of served files) per new context that performs a handshake
// declaring the extension, within the bound of discoveries in flight; at
// most maxPrefetches run at once and a handshake past that starts none.
// The legacy era is left out: its listings need the session, which the
// initialize reply only creates.

// Bounds of the prefetch.
const (
	// maxPrefetches is how many prefetches run at once in the sidecar.
	maxPrefetches = DefaultMaxDiscoveries
	// prefetchTimeout bounds one prefetch, which outlives the request
	// that started it.
	prefetchTimeout = 30 * time.Second
)

// declaresSkills reports whether a 2026-07-28 request's client declares
// the skills extension.
func declaresSkills(msg rewrite.Message) bool {
	_, ok := rewrite.GetKey(msg.Params, []string{"_meta", metaClientCaps, "extensions", rewrite.SkillsExtensionID})
	return ok
}

// prefetch starts the discovery and first page of r's context when msg is
// a handshake declaring the skills extension and the context has learned
// nothing.
func (h *Handler) prefetch(r *http.Request, msg rewrite.Message) {
	o := h.opts.Overlay
	if o == nil || msg.Method != "server/discover" || !declaresSkills(msg) || o.resourcesCap.Load() == capNone {
		return
	}
	v := h.current()
	if v.snap == nil || len(v.skillURIs) == 0 {
		return
	}
	c := o.context(r, v.snap)
	c.mu.Lock()
	busy := c.disc != nil || len(c.files) > 0
	c.mu.Unlock()
	if busy {
		return
	}
	select {
	case o.prefetching <- struct{}{}:
	default:
		return // a flood of handshakes starts no more than maxPrefetches
	}
	ctx, cancel := context.WithTimeout(context.Background(), prefetchTimeout)
	detached := r.Clone(ctx) // the caller's headers and address; the request may end first
	unknownOK := h.catalogOutlivesUpstream()
	go func() {
		defer func() {
			cancel()
			<-o.prefetching
		}()
		from, to, _ := page(v.skillURIs, "", false, h.opts.PageSize)
		_, _, _ = o.entries(detached, msg, v, from, to, unknownOK)
	}()
}
