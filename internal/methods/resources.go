package methods

import (
	"encoding/json"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// resources/list is composed over two sources: the upstream's own pages come
// first, untouched; the upstream's last page (no nextCursor) gets the first
// page of the sidecar's skill files appended and, when more follow, a
// nextCursor of the sidecar's own (prefixed so it cannot be mistaken for an
// upstream cursor), which ServeLocal answers without the upstream.

// EditReply implements proxy.Local: for resources/list it returns the edit
// that appends the sidecar's resources to the upstream's last page; for a
// handshake (with an overlay) the one that shows the reply to the overlay;
// for prompts/list and tools/list, with host-compat on, editCompatList's;
// for any other request nil. (A forwarded read of a catalog file is
// watched, not edited: ObserveReply.)
func (h *Handler) EditReply(r *http.Request, msg rewrite.Message) func(reply []byte) []byte {
	// The closures are built in functions of their own (handshakeEdit,
	// resourcesEdit): a parameter a closure captures moves to the heap on
	// entry, so one here would cost every forwarded request an allocation.
	if (msg.Method == "initialize" || msg.Method == "server/discover") && h.opts.Overlay != nil {
		return h.handshakeEdit(r, msg)
	}
	if msg.Method != "resources/list" {
		return h.editCompatList(r, msg)
	}
	v := h.current()
	if len(v.resURIs) == 0 {
		return nil
	}
	return h.resourcesEdit(r, msg, v)
}

// handshakeEdit is EditReply's edit of a handshake reply.
func (h *Handler) handshakeEdit(r *http.Request, msg rewrite.Message) func(reply []byte) []byte {
	h.handshake(r, msg) // a client about to list skills (prefetch.go)
	// The upstream's capabilities, as it declares them: without
	// resources, the overlay asks it nothing (internal/upstreamfiles/discovery.go).
	return func(reply []byte) []byte {
		h.opts.Overlay.ObserveHandshake(reply)
		h.handshakeAnswered(r, msg, reply)
		return reply
	}
}

// resourcesEdit is EditReply's edit of a resources/list reply.
func (h *Handler) resourcesEdit(r *http.Request, msg rewrite.Message, v *view) func(reply []byte) []byte {
	e, _ := checkEra(r.Header, msg)
	return func(reply []byte) []byte { return h.appendResources(r, msg, v, e, reply) }
}

// appendResources appends the sidecar's first page of resources to the
// upstream's last page, leaving out the URIs the upstream lists itself
// (stated.go).
func (h *Handler) appendResources(r *http.Request, msg rewrite.Message, v *view, e era, reply []byte) []byte {
	m, err := rewrite.ParseMessage(reply)
	if err != nil {
		return reply
	}
	switch m.Kind {
	case rewrite.KindError:
		// An upstream without resources support: the sidecar's files are
		// the whole listing.
		code, _ := rewrite.GetKey(m.Error, []string{"code"})
		if string(code) != "-32601" {
			return reply
		}
		b := []byte(`{"jsonrpc":"2.0","id":`)
		b = append(b, m.ID...)
		b = append(b, `,"result":`...)
		uris, entries := h.ownResources(r, msg, v, nil, "", false)
		b = append(b, h.resourcesPage(uris, entries, e, false, "")...)
		return append(b, '}')
	case rewrite.KindResponse:
	default:
		return reply
	}
	if nc, ok := rewrite.GetKey(m.Result, []string{"nextCursor"}); ok && string(nc) != "null" && string(nc) != `""` {
		return reply // not the upstream's last page yet
	}
	uris, entries := h.ownResources(r, msg, v, pageURIs(m.Result), "", false)
	from, to, more := page(uris, "", false, h.opts.PageSize)
	if to == from {
		return reply // every catalog URI is the upstream's own
	}
	out, err := rewrite.AppendToArray(reply, []string{"result", "resources"}, entries[from:to]...)
	if err != nil {
		return reply
	}
	if more {
		c, _ := json.Marshal(makeCursor(cursorResources, uris[to-1]))
		if out, err = rewrite.SetKey(out, []string{"result", "nextCursor"}, c); err != nil {
			return reply
		}
	}
	if e.modern {
		// The page now holds the sidecar's entries too: a cache may keep
		// it no longer, nor share it more widely, than either side allows.
		out = h.mergeCache(out)
	}
	return out
}

func (h *Handler) resourcesListLocal(r *http.Request, v *view, e era, msg rewrite.Message) ([]byte, error) {
	last, has, err := cursorParam(msg, cursorResources)
	if err != nil {
		return nil, err
	}
	uris, entries := h.ownResources(r, msg, v, nil, last, has)
	return h.resourcesPage(uris, entries, e, has, last), nil
}

// resourcesPage encodes a resources/list result of the sidecar's page after
// last; modern results carry the cacheable fields.
func (h *Handler) resourcesPage(uris []string, entries []json.RawMessage, e era, has bool, last string) []byte {
	b := make([]byte, 0, 4096)
	b = append(b, '{')
	b = listPage(b, "resources", uris, entries, last, has, h.opts.PageSize, cursorResources)
	if !e.modern {
		return append(b, '}')
	}
	return h.finish(b, e, true)
}

// ObserveReply implements proxy.Observing: a forwarded resources/read of a
// catalog URI (one the upstream serves itself) is hashed while it passes
// to the caller, and what it serves is published once it ended whole
// (internal/upstreamfiles/readwatch.go). Any other request is not watched.
func (h *Handler) ObserveReply(r *http.Request, msg rewrite.Message) rewrite.Observer {
	if msg.Method != "resources/read" || h.opts.Overlay == nil {
		return nil
	}
	uri, _ := paramString(msg.Params, "uri")
	v := h.current()
	if v.snap == nil {
		return nil
	}
	if _, ok := v.snap.File(uri); !ok {
		return nil
	}
	return h.opts.Overlay.WatchRead(r, v.snap, uri, msg.ID)
}
