package methods

import (
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The prefetch at the handshake: this file sees the handshakes pass and
// says which client declares the skills extension; what the prefetch runs,
// and its bounds, are the overlay's (internal/upstreamfiles, prefetch.go).

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
		o.NoteDeclared(r)
	}
}

// Notified implements proxy.Notified: a legacy client's
// notifications/initialized, accepted by the upstream, after an
// initialize that declared the extension starts its prefetch.
func (h *Handler) Notified(r *http.Request, msg rewrite.Message) {
	o := h.opts.Overlay
	if o == nil || msg.Method != "notifications/initialized" || !o.TakeDeclared(r) {
		return
	}
	h.prefetch(r, msg, false)
}

// prefetch starts the discovery and first page of r's context, for a
// client of the era modern says, when the context has learned nothing.
func (h *Handler) prefetch(r *http.Request, msg rewrite.Message, modern bool) {
	if h.opts.Serves != nil && !h.opts.Serves(modern) {
		return // the sidecar answers no skills/list on this wire
	}
	v := h.current()
	if v.snap == nil || len(v.skillURIs) == 0 {
		return
	}
	unknownOK := h.catalogOutlivesUpstream()
	h.opts.Overlay.Prefetch(r, v.snap, func(detached *http.Request) {
		from, to, _ := page(v.skillURIs, "", false, h.opts.PageSize)
		_, _, _, _ = h.overlayEntries(detached, msg, v, from, to, unknownOK) // a failure leaves no entry behind
	})
}
