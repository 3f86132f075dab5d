package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// modifyResponse applies the response hooks to the reply to r. Replies that need no change are
// left alone and relayed exactly as they come.
// mt is the reply's media type and pl the request's plan, both as the
// relay already has them.
func (p *Proxy) modifyResponse(r *http.Request, resp *http.Response, pl *plan, mt string) error {
	if pl.observe != nil {
		tap(resp, pl.observe, mt)
	}
	if mt == "text/event-stream" {
		// Tell any buffering hop (nginx and kin) to pass events at once.
		resp.Header.Set("X-Accel-Buffering", "no")
		if p.opts.Metrics != nil {
			p.opts.Metrics.StreamOpened()
			resp.Body = &countedBody{ReadCloser: resp.Body, m: p.opts.Metrics}
		}
		if pl.kind == kindGet {
			resp.Body = newStoppableBody(resp.Body, p.streams)
		}
		if p.opts.OnResourcesChanged != nil {
			resp.Body = p.watch(r, resp.Body)
		}
	}
	if !pl.edits() {
		return nil
	}
	switch mt {
	case "application/json":
		if pl.kind == kindResumed {
			return nil
		}
		return p.rewriteJSON(resp, pl)
	case "text/event-stream":
		if resp.StatusCode != http.StatusOK {
			return nil
		}
		resp.Body = &sseBody{
			r:    rewrite.NewReader(resp.Body, p.opts.MaxEventBytes),
			body: resp.Body,
			edit: p.eventEdit(pl),
			stop: p.streamStop(pl),
		}
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	return nil
}

// streamStop returns the context whose end ends this stream cleanly on
// shutdown: only standalone GET streams are ended early; POST replies drain.
func (p *Proxy) streamStop(pl *plan) context.Context {
	if pl.get() {
		return p.streams
	}
	return nil
}

// eventEdit returns the edit for one SSE event's message: on a POST, the
// request's own edit applied to its reply (not to notifications or server
// requests in the same stream); on a GET stream, where the request is
// unknown, the declaration spliced into any reply shaped like a handshake
// result (an initialize reply replayed after Last-Event-ID).
func (p *Proxy) eventEdit(pl *plan) func(msg []byte) []byte {
	if pl.kind == kindResumed {
		return func(msg []byte) []byte {
			if !rewrite.LooksLikeHandshakeResult(msg) {
				return msg
			}
			return p.splicer(eraLegacy)(msg)
		}
	}
	if pl.kind == kindBatch {
		return func(msg []byte) []byte {
			m, err := rewrite.ParseMessage(msg)
			if err != nil || m.Kind != rewrite.KindResponse || !pl.isHandshakeID(m.ID) {
				return msg
			}
			return p.splicer(eraLegacy)(msg)
		}
	}
	// Only the reply to this request is edited, not a notification or a
	// server request (whose id, from the server's own id space, may equal
	// the request's). ReplyID does not validate msg: every edit checks the
	// JSON itself, so a megabyte reply (a skill file being hashed) is
	// validated once and walked once here.
	return func(msg []byte) []byte {
		if id, ok := rewrite.ReplyID(msg); !ok || !idmap.Same(id, pl.id) {
			return msg
		}
		return pl.edit(msg)
	}
}

func (p *Proxy) rewriteJSON(resp *http.Response, pl *plan) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(p.opts.MaxEventBytes)+1))
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read upstream reply: %w", err)
	}
	if len(b) > p.opts.MaxEventBytes {
		return fmt.Errorf("upstream reply larger than %d bytes: %w", p.opts.MaxEventBytes, errTooLarge)
	}
	out := b
	if pl.kind == kindBatch {
		if spliced, changed, err := rewrite.SpliceBatch(b, pl.isHandshakeID, p.opts.Declaration); err == nil {
			out = spliced
			if changed {
				p.opts.Metrics.DeclarationInjected(eraLegacy)
			}
		} else {
			// Not ours to judge: pass the upstream's bytes on as they were.
			p.log.Warn("batch reply not rewritten", zap.Error(err))
		}
	} else if id, ok := rewrite.ReplyID(b); ok && idmap.Same(id, pl.id) {
		// Only the reply to this request is edited, as on an SSE stream
		// (eventEdit): a reply with another id (an upstream that mixed up
		// its replies) is not the caller's to splice into, and goes on as
		// the upstream sent it.
		out = pl.edit(b)
	}
	if resp.StatusCode != http.StatusOK && !bytes.Equal(out, b) {
		// The edit answered what the upstream refused (resources/list on an
		// upstream without resources): the reply is now a success.
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

var errTooLarge = errors.New("proxy: upstream message too large")

// clientGone reports whether err is the cancellation of r by its client
// going away: an answer to it has nobody to reach.
func clientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && errors.Is(err, context.Canceled)
}

// handleUpstreamError answers when the upstream could not be reached or its
// reply could not be read before headers were sent. It does not log: the
// error goes into the plan, and the request's one line (record) carries it
// with everything else known about the request.
func (p *Proxy) handleUpstreamError(w http.ResponseWriter, r *http.Request, pl *plan, err error) {
	if clientGone(r, err) {
		return // nobody is listening
	}
	e := upstreamError(err)
	var own *reply.Error
	var ref *onbehalf.Refusal
	switch {
	case errors.As(err, &ref):
		// The upstream refused a request a transport below (the era
		// bridge's legacy front) made in the caller's place: passed on,
		// status and WWW-Authenticate, as the gate's refusals are.
		writeRefusal(w, pl.id, ref)
		return
	case errors.As(err, &own):
		// A transport below (the era bridge) refused the request, or
		// failed on the caller's behalf, and said what the caller gets: a
		// fixed message; the cause (addresses, the upstream's words), when
		// there is one, is only logged. A refusal wraps none: the
		// caller's mistake or a limit is no failure of the sidecar's.
		e = own
		if errors.Unwrap(err) == nil {
			writeError(w, pl.id, e)
			return
		}
	case errors.Is(err, errTooLarge):
		e = &reply.Error{Status: http.StatusBadGateway, Code: reply.CodeInternalError, Message: err.Error(),
			Data: map[string]string{"reason": "upstream_message_too_large"}}
	}
	pl.err = err
	writeError(w, pl.id, e)
}

// mediaType is ct's media type, lower case, without parameters; "" when
// ct is empty or malformed.
func mediaType(ct string) string {
	mt, err := wire.MediaType(ct)
	if err != nil {
		return ""
	}
	return mt
}
