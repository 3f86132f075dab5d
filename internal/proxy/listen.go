package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"

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

// planListen returns the plan of a subscriptions/listen request msg, or nil
// when the sidecar honours none of its filter (then it is relayed as any
// other request).
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
	if !h.Any() {
		return nil
	}
	return &listenPlan{honoured: h}
}

// listenFilter is the notify filter of a listen stream.
func listenFilter(pl *plan) notify.Filter {
	h := pl.listen.honoured
	return notify.Filter{ResourcesListChanged: h.ResourcesListChanged, AgentsListChanged: h.AgentsListChanged,
		PromptsListChanged: h.PromptsListChanged, ToolsListChanged: h.ToolsListChanged,
		URIs: h.ResourceSubscriptions, SubscriptionID: pl.id}
}

// sseData frames one JSON-RPC message as an SSE event with no id: line.
func sseData(msg []byte) []byte {
	b := make([]byte, 0, len(msg)+8)
	b = append(append(append(b, "data: "...), msg...), "\n\n"...)
	return b
}

// relayListen relays the upstream's reply to a listen request the sidecar
// honours part of.
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
	var s *notify.Stream
	if resp.StatusCode == http.StatusOK && mt == "text/event-stream" {
		s = p.opts.Notify.Open(listenFilter(pl), w, flush)
	}
	if s == nil {
		// Not a stream, or past the hub's bounds: the upstream's bytes alone.
		if err := copyBody(w, resp.Body, nil, true, p.buffers); err != nil {
			p.abort(r, pl, err)
		}
		return
	}
	rd := rewrite.NewReader(resp.Body, p.opts.MaxEventBytes)
	acked, upstreamHonours := false, false
	for {
		ev, err := rd.Next()
		if err != nil {
			if len(ev.Raw) > 0 {
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
			case !acked && rewrite.IsMethodNotFound(ev.Data, pl.id):
				// The upstream has no listen: the sidecar's stream alone.
				if s.WriteEvent(sseData(rewrite.Acknowledgement(pl.id, pl.listen.honoured))) == nil {
					p.holdListen(w, r, s, sseData(rewrite.ListenResult(pl.id)))
				}
				return
			case !acked:
				if merged, up, err := rewrite.MergeAcknowledgement(ev.Data, pl.listen.honoured); err == nil {
					acked, upstreamHonours = true, up
					out = rewrite.Reframe(ev, merged)
					s.MarkAcked()
				}
			case isReply && bytes.Equal(id, pl.id):
				// The upstream ended its part of the subscription.
				if !upstreamHonours {
					p.holdListen(w, r, s, out)
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

// serveListenAlone answers a listen the upstream does not support with the
// sidecar's own stream: its acknowledgement, then its notifications.
func (p *Proxy) serveListenAlone(w http.ResponseWriter, r *http.Request, pl *plan) {
	f, _ := w.(http.Flusher)
	var flush func()
	if f != nil {
		flush = f.Flush
	}
	s := p.opts.Notify.Open(listenFilter(pl), w, flush)
	if s == nil {
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
