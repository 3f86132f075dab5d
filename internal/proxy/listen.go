package proxy

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The hook by which the sidecar's own notifications reach a modern client's
// subscriptions/listen stream (2026-07-28 basic/patterns/subscriptions).
// The request is forwarded unchanged; the upstream's acknowledgement gets
// what the sidecar honours merged into it (rewrite.MergeAcknowledgement),
// and notify inserts the sidecar's notifications, carrying the listen's
// subscriptionId, between the upstream's events after it. What the sidecar
// honours of a filter: resourcesListChanged (the catalog's URIs are the
// sidecar's), agentsListChanged, promptsListChanged and toolsListChanged
// when the declaration adds prompts or tools (host compatibility), and
// resourceSubscriptions entries that are skill URIs the sidecar serves
// (Options.OwnsURI).
//
// Two cases are the sidecar's to finish:
//   - An upstream that honours nothing of the filter ends the stream at
//     once after its acknowledgement with the listen's result (go-sdk does).
//     The sidecar still honours its part, so it holds that result back and
//     keeps the stream open for its own notifications: until the client
//     leaves (then nobody reads the result), or EndStreams (shutdown), when
//     it writes the held result so the client ends the subscription
//     gracefully and listens again elsewhere. An upstream that did honour
//     something and then ends its stream ends the client's as well, result
//     included: the client then re-listens and loses nothing of the
//     upstream's.
//   - An upstream without subscriptions/listen (-32601, or HTTP 404/405):
//     the sidecar serves the stream alone, writing an acknowledgement of
//     what it honours and its notifications, until the client leaves or
//     EndStreams, which writes the graceful result.

// listenPlan is what the request path learned of a listen request.
type listenPlan struct {
	honoured rewrite.ListenFilter // the part of the filter the sidecar honours
}

// planListen returns the plan of a subscriptions/listen request msg. When
// the sidecar honours none of its filter the plan's honoured is empty: a
// stream in reply is relayed only to put the acknowledgement first
// (preAck), and any other reply as any other request's.
func (p *Proxy) planListen(msg rewrite.Message) *listenPlan {
	if p.opts.Notify == nil || msg.Method != rewrite.MethodListen || len(msg.ID) == 0 {
		return nil
	}
	asked, err := rewrite.ParseListenFilter(msg.Params)
	if err != nil {
		return nil
	}
	d := p.opts.Declaration
	h := rewrite.ListenFilter{ResourcesListChanged: asked.ResourcesListChanged, AgentsListChanged: asked.AgentsListChanged,
		PromptsListChanged: asked.PromptsListChanged && d.Prompts, ToolsListChanged: asked.ToolsListChanged && d.Tools}
	for _, u := range asked.ResourceSubscriptions {
		if p.opts.OwnsURI != nil && p.opts.OwnsURI(u) {
			h.ResourceSubscriptions = append(h.ResourceSubscriptions, u)
		}
	}
	return &listenPlan{honoured: h}
}

// listenFilter is the notify filter of a listen stream of who's, which
// takes a place of who's share of the hub's streams.
func listenFilter(pl *plan, who caller.ID) notify.Filter {
	h := pl.listen.honoured
	return notify.Filter{ResourcesListChanged: h.ResourcesListChanged, AgentsListChanged: h.AgentsListChanged,
		PromptsListChanged: h.PromptsListChanged, ToolsListChanged: h.ToolsListChanged,
		URIs: h.ResourceSubscriptions, SubscriptionID: pl.id, Caller: who}
}

// sseData frames one JSON-RPC message as an SSE event with no id: line.
func sseData(msg []byte) []byte {
	b := make([]byte, 0, len(msg)+8)
	b = append(append(append(b, "data: "...), msg...), "\n\n"...)
	return b
}

// ownsListenReply reports whether relayListen relays resp, the reply to
// the listen planned as pl: any reply when the sidecar honours part of the
// filter, only a stream otherwise.
func ownsListenReply(pl *listenPlan, resp *http.Response, mt string) bool {
	return pl != nil && (pl.honoured.Any() || resp.StatusCode == http.StatusOK && mt == "text/event-stream")
}

// listenSink is what relayListen writes a stream to: the notify.Stream that
// also inserts the sidecar's notifications, or, for a listen the sidecar
// honours nothing of, the client's writer alone (passThrough).
type listenSink interface {
	io.Writer
	Flush()
	Close()
	MarkAcked()
}

// passThrough is a listenSink with no notifications of the sidecar's.
type passThrough struct {
	w     io.Writer
	flush func()
}

func (t passThrough) Write(b []byte) (int, error) { return t.w.Write(b) }
func (t passThrough) Flush() {
	if t.flush != nil {
		t.flush()
	}
}
func (passThrough) Close()     {}
func (passThrough) MarkAcked() {}

// relayListen relays the upstream's reply to a listen request
// (ownsListenReply).
func (p *Proxy) relayListen(w http.ResponseWriter, r *http.Request, pl *plan, resp *http.Response, mt string) {
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		p.serveListenAlone(w, r, pl)
		return
	case mt == "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(p.opts.MaxEventBytes)+1))
		if err == nil && rewrite.IsMethodNotFound(b, pl.id) {
			p.serveListenAlone(w, r, pl)
			return
		}
		copyHeader(w.Header(), resp.Header)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
		return
	}
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	f, _ := w.(http.Flusher)
	var flush func()
	if f != nil {
		flush = f.Flush
		f.Flush()
	}
	ours := pl.listen.honoured.Any()
	var s listenSink
	switch {
	case resp.StatusCode != http.StatusOK || mt != "text/event-stream":
	case !ours:
		s = passThrough{w: w, flush: flush}
	default:
		if ns, _ := p.opts.Notify.Open(listenFilter(pl, p.opts.Callers.Of(r)), w, flush); ns != nil {
			s = ns
		}
	}
	if s == nil {
		// Not a stream, or past the hub's bounds: the upstream's bytes alone.
		if err := copyBody(w, resp.Body, nil, eachRead, p.buffers); err != nil {
			p.abort(r, pl, err)
		}
		return
	}
	rd := rewrite.NewReader(resp.Body, p.opts.MaxEventBytes)
	acked, upstreamHonours := false, false
	early := preAck{max: p.opts.MaxEventBytes}
	for {
		ev, err := rd.Next()
		if err != nil {
			if early.release(s) == nil && len(ev.Raw) > 0 {
				_, _ = s.Write(ev.Raw)
			}
			s.Close()
			if errors.Is(err, io.EOF) || r.Context().Err() != nil {
				return
			}
			p.abort(r, pl, err)
		}
		out := ev.Raw
		if len(ev.Data) > 0 {
			switch id, isReply := rewrite.ReplyID(ev.Data); {
			case !acked && ours && rewrite.IsMethodNotFound(ev.Data, pl.id):
				// The upstream has no listen: the sidecar's stream alone.
				s := s.(*notify.Stream)
				if s.WriteEvent(sseData(rewrite.Acknowledgement(pl.id, pl.listen.honoured))) == nil && early.release(s) == nil {
					p.holdListen(w, r, s, sseData(rewrite.ListenResult(pl.id)))
				}
				return
			case !acked:
				merged, up, err := rewrite.MergeAcknowledgement(ev.Data, pl.listen.honoured)
				if err != nil {
					if !isReply && early.hold(ev, pl.id) {
						continue // until the acknowledgement has gone first
					}
					if early.release(s) != nil {
						s.Close()
						return
					}
					break
				}
				acked, upstreamHonours = true, up
				s.MarkAcked()
				early.keepOwn()
				ack := ev.Raw // nothing merged: the upstream's bytes
				if ours {
					ack = rewrite.Reframe(ev, merged)
				}
				if _, err := s.Write(ack); err != nil || early.release(s) != nil {
					s.Close()
					return
				}
				s.Flush()
				continue
			case isReply && idmap.Same(id, pl.id):
				// The upstream ended its part of the subscription.
				if !upstreamHonours && ours {
					p.holdListen(w, r, s.(*notify.Stream), out)
					return
				}
				s.Close()
				_, _ = w.Write(out)
				if flush != nil {
					flush()
				}
				return
			}
		}
		if _, err := s.Write(out); err != nil {
			s.Close()
			return
		}
		s.Flush()
	}
}

// preAck holds the upstream's notifications that reach a listen stream
// before its acknowledgement. The stream's first message must be the
// acknowledgement, and every notification on it carries the listen's
// subscriptionId (2026-07-28 basic/patterns/subscriptions); but an upstream
// can send one first. go-sdk v1.8.0 does, two ways, when its tools change
// as the listen opens: it registers the listen before it writes the
// acknowledgement, so a list_changed of the subscription can precede it;
// and a stateless session not yet known to be modern gets the legacy
// broadcast, a list_changed without a subscriptionId, on the same stream.
// Once the acknowledgement has gone, the held notifications of this
// subscription follow it in their order (a client that listed before it
// listened loses no change), and those without its subscriptionId are
// dropped: they belong to no subscription of the client's, and it lists
// after the acknowledgement anyway. Events without data (comments, a
// priming event) and messages that are not notifications pass in place.
// At most max bytes are held; past that, or when the upstream answers the
// listen without acknowledging it, everything held is written as it came.
type preAck struct {
	events []rewrite.Event
	ours   []bool // the event carries the listen's subscriptionId
	size   int
	max    int
	off    bool // holding is over
}

// hold keeps ev, a message before the acknowledgement of the listen whose
// raw id is id, and reports whether it did: only a notification is held.
func (h *preAck) hold(ev rewrite.Event, id []byte) bool {
	if h.off || h.size+len(ev.Raw) > h.max {
		return false
	}
	m, err := rewrite.ParseMessage(ev.Data)
	if err != nil || m.Kind != rewrite.KindNotification {
		return false
	}
	sub, _ := rewrite.GetKey(m.Params, []string{"_meta", rewrite.MetaSubscriptionID})
	h.events = append(h.events, ev)
	h.ours = append(h.ours, sub != nil && idmap.Same(sub, id))
	h.size += len(ev.Raw)
	return true
}

// keepOwn drops the held notifications without the listen's
// subscriptionId, as its acknowledgement is about to be written.
func (h *preAck) keepOwn() {
	kept := h.events[:0]
	for i, ev := range h.events {
		if h.ours[i] {
			kept = append(kept, ev)
		}
	}
	h.events, h.ours = kept, nil
}

// release writes what is held to s, each event without a BOM or
// line-ending prefix (rewrite.Event.Body), as it now stands elsewhere
// than it came, and holds nothing from then on.
func (h *preAck) release(s listenSink) error {
	h.off = true
	for _, ev := range h.events {
		if _, err := s.Write(ev.Body()); err != nil {
			return err
		}
	}
	if len(h.events) > 0 {
		s.Flush()
	}
	h.events, h.ours = nil, nil
	return nil
}

// serveListenAlone answers a listen the upstream does not support with the
// sidecar's own stream: its acknowledgement, then its notifications.
func (p *Proxy) serveListenAlone(w http.ResponseWriter, r *http.Request, pl *plan) {
	f, _ := w.(http.Flusher)
	var flush func()
	if f != nil {
		flush = f.Flush
	}
	s, err := p.opts.Notify.Open(listenFilter(pl, p.opts.Callers.Of(r)), w, flush)
	var refused *caller.Refusal
	if errors.As(err, &refused) {
		// A place of notify_streams refused, as every table callers
		// share refuses one (429 over the caller's share, 503 full).
		writeError(w, pl.id, refused.Reply())
		return
	} else if err != nil {
		writeError(w, pl.id, &reply.Error{Status: http.StatusOK, Code: reply.CodeInternalError, Message: "too many open streams: subscriptions/listen not served"})
		return
	}
	h := w.Header()
	clear(h)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if s.WriteEvent(sseData(rewrite.Acknowledgement(pl.id, pl.listen.honoured))) != nil {
		s.Close()
		return
	}
	p.holdListen(w, r, s, sseData(rewrite.ListenResult(pl.id)))
}

// holdListen keeps a listen stream open for the sidecar's notifications
// until the client leaves, or until EndStreams, which writes result (the
// event that ends the subscription gracefully) after the last of them.
func (p *Proxy) holdListen(w http.ResponseWriter, r *http.Request, s *notify.Stream, result []byte) {
	select {
	case <-r.Context().Done():
		s.Close()
	case <-p.streams.Done():
		// Close waits for an insert in progress, which writes whole
		// events: the stream is at an event boundary after it.
		s.Close()
		_, _ = w.Write(result)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// copyHeader copies the upstream's reply headers to the client's.
func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = vv
	}
}
