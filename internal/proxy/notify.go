package proxy

import (
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
)

// The hooks by which the sidecar's own notifications (package notify) reach
// a legacy session's standalone GET stream. The proxy only says which
// stream belongs to which session and hands notify the writer; what is
// sent, when, and where between the upstream's events is notify's.

// legacyFilter is what a standalone GET stream of session sid receives:
// the list_changed notifications of what the sidecar adds (unsolicited on
// the legacy wire, as the upstream's own are: resources and agents, and
// prompts and tools when the declaration adds them) and resources/updated
// for the session's subscriptions. The stream takes a place of who's
// share of the hub's streams.
func (p *Proxy) legacyFilter(sid string, who caller.ID) notify.Filter {
	d := p.opts.Declaration
	return notify.Filter{Session: sid, ResourcesListChanged: true, AgentsListChanged: true,
		PromptsListChanged: d.Prompts, ToolsListChanged: d.Tools, Caller: who}
}

// notifyWriter is the http.ResponseWriter copyBody writes a GET stream
// through, so that notify's inserter and the relay never write at once.
type notifyWriter struct {
	http.ResponseWriter
	s *notify.Stream
}

func (w notifyWriter) Write(p []byte) (int, error) { return w.s.Write(p) }
func (w notifyWriter) Flush()                      { w.s.Flush() }

// withNotify returns w wrapped for the session's notifications, and the
// function that ends them, or w itself and a no-op when there are none
// (no hub, no session, or a bound reached: who's share of the streams
// among them).
func (p *Proxy) withNotify(w http.ResponseWriter, sid string, who caller.ID) (http.ResponseWriter, func()) {
	if p.opts.Notify == nil || sid == "" {
		return w, func() {}
	}
	var flush func()
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	s, _ := p.opts.Notify.Open(p.legacyFilter(sid, who), w, flush)
	if s == nil {
		return w, func() {}
	}
	return notifyWriter{ResponseWriter: w, s: s}, s.Close
}

// serveOwnStream answers a standalone GET the upstream refused with 405 (it
// sends nothing unsolicited) with a stream of the sidecar's notifications
// alone, until the client leaves or EndStreams, and reports whether it did:
// not without a hub or a session, for a caller AdmitStream refuses, or
// past a bound.
func (p *Proxy) serveOwnStream(w http.ResponseWriter, r *http.Request, sid string) bool {
	if p.opts.Notify == nil || sid == "" {
		return false
	}
	if p.opts.AdmitStream != nil && p.opts.AdmitStream(r) != nil {
		// An upstream may answer 405 before it looks at the session: the
		// stream carries that session's notifications and takes one of its
		// places, so it is only for a caller the upstream admits in it (an
		// upstream that binds sessions to users refuses everyone else).
		return false
	}
	f, _ := w.(http.Flusher)
	var flush func()
	if f != nil {
		flush = f.Flush
	}
	s, _ := p.opts.Notify.Open(p.legacyFilter(sid, p.opts.Callers.Of(r)), w, flush)
	if s == nil {
		return false
	}
	defer s.Close()
	h := w.Header()
	clear(h)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s.Flush()
	select {
	case <-r.Context().Done():
	case <-p.streams.Done():
	}
	return true
}
