package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// codeSessionNotFound is what streamable HTTP servers answer, with 404,
// for a session they do not know.
const codeSessionNotFound = -32001

// call sends msg, a request, on p and answers with its reply: an SSE
// stream of every message for it, the reply last, when the client accepts
// one (as a streamable HTTP server's own transport answers by default, so
// what the client sees does not depend on the timing of the server's
// notifications); otherwise JSON, when the reply is the first message.
// onFinal, when set, is called once on every path: with the reply (or the
// error standing for it: a timeout, the process's end) once it is in, even
// when the client went away before it was written to it, since what the
// server answered stands, as its own transport would keep a session its
// client left; with nil when there was none (the request was not sent, or
// its client left before the reply came).
func (t *Transport) call(req *http.Request, p *pipe, msg rewrite.Message, s *session, hdr http.Header, onFinal func([]byte)) (*http.Response, error) {
	if onFinal == nil {
		onFinal = func([]byte) {}
	}
	c, err := p.start(msg, t.callerOf(req))
	var refusal *reply.Error
	if errors.As(err, &refusal) {
		onFinal(nil)
		return refused(req, msg.ID, refusal), nil
	}
	if err != nil {
		onFinal(nil)
		if s != nil {
			return notFound(req, msg.ID), nil // the session's process is gone or retired: re-initialize
		}
		return respond(req, http.StatusBadGateway, nil, errorReply(msg.ID, reply.CodeInternalError, "the stdio upstream process exited", "stdio_process_exited")), nil
	}
	ctx, cancel := context.WithCancel(req.Context())
	deadline := time.Now().Add(t.MaxRequestTime)
	first, final, err := t.next(ctx, p, c, deadline)
	if err != nil {
		cancel()
		onFinal(first) // the reply when it was in already, else nil
		c.msgs.sent(first)
		c.msgs.close()
		return nil, err
	}
	if final && !acceptsSSE(req) {
		cancel()
		onFinal(first)
		c.msgs.sent(first) // handed over as the body
		c.msgs.close()
		return respond(req, http.StatusOK, hdr, first), nil
	}
	pr, pw := io.Pipe()
	go func() {
		// One exit: onFinal runs once, on every path, before the stream
		// ends (a client that read to its end finds the session settled).
		// Each message leaves the budget once written (or let go), and
		// what is left queued when the stream ends.
		var got []byte // the reply, once read
		var ended error
		defer func() {
			onFinal(got)
			_ = pw.CloseWithError(ended) // nil: the stream ends at its reply
			cancel()
			c.msgs.close()
		}()
		m, fin := first, final
		for {
			if fin {
				got = m // the process answered, whether or not the client takes it
			}
			_, err := pw.Write(sseEvent(m))
			c.msgs.sent(m)
			if err != nil {
				if !fin && !p.cancel(c, "the client went away") {
					got = <-c.final // the reply was in already (or is being put there)
					c.msgs.sent(got)
				}
				return
			}
			if fin {
				return
			}
			if m, fin, ended = t.next(ctx, p, c, deadline); ended != nil {
				if fin {
					got = m // in already as the client left
				}
				c.msgs.sent(m)
				return
			}
		}
	}()
	return stream(req, hdr, pr, cancel), nil
}

// next returns the next message for c and whether it is its reply. A
// message resets the wait; after RequestTimeout without one, or at
// deadline, the call is cancelled on the pipe (notifications/cancelled)
// and answered with an error. A subscriptions/listen waits as long as its
// caller does. When ctx ends first the call is cancelled and ctx's error
// returned, with the reply (final) when it was in already: what the
// server answered stands whichever of the two the wait met first.
func (t *Transport) next(ctx context.Context, p *pipe, c *call, deadline time.Time) ([]byte, bool, error) {
	for {
		var expire <-chan time.Time
		if !c.listen {
			timer := time.NewTimer(min(t.RequestTimeout, time.Until(deadline)))
			expire = timer.C
			defer timer.Stop() // at most one per loop: the loop turns only when a reply raced its timeout
		}
		select {
		case m := <-c.msgs.ch:
			return c.msgs.taken(m), false, nil
		case f := <-c.final:
			// What the process sent before its reply goes first.
			select {
			case m := <-c.msgs.ch:
				c.final <- f
				return c.msgs.taken(m), false, nil
			default:
			}
			return f, true, nil
		case <-expire:
			if p.cancel(c, "timed out") {
				t.event(EventTimeout)
				return c.msgs.force(errorReply(c.id, reply.CodeInternalError, "the stdio upstream did not answer in time", "stdio_request_timeout")), true, nil
			}
		case <-ctx.Done():
			if !p.cancel(c, "the client went away") {
				return <-c.final, true, ctx.Err() // the reply was in (or is being put there)
			}
			return nil, false, ctx.Err()
		}
	}
}

// cancelled maps a caller's notifications/cancelled to the call it names:
// its requestId becomes the minted id. False when it names no call of
// this caller in flight.
func (p *pipe) cancelled(msg rewrite.Message, who caller.ID) ([]byte, bool) {
	rid, ok := rewrite.GetKey(msg.Params, []string{"requestId"})
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	var hit *call
	for _, c := range p.pending {
		if bytes.Equal(c.id, rid) && (!p.shared || c.who == who) {
			hit = c
			break
		}
	}
	p.mu.Unlock()
	if hit == nil {
		return nil, false
	}
	out, err := rewrite.SetKey(msg.Raw, []string{"params", "requestId"}, json.RawMessage(hit.pipeID))
	return out, err == nil
}

// get opens a legacy session's standalone SSE stream: what the process
// sends that names no request, while no single request is in flight.
// There is one per session; the 2026-07-28 wire has none.
func (t *Transport) get(req *http.Request, sid string) *http.Response {
	if sid == "" {
		return respond(req, http.StatusMethodNotAllowed, http.Header{"Allow": {"POST"}}, nil)
	}
	s := t.session(sid)
	if s == nil {
		return notFound(req, nil)
	}
	return t.getStream(req, s)
}

// getStream opens the GET stream of s, a session looked up.
func (t *Transport) getStream(req *http.Request, s *session) *http.Response {
	sk, gone := s.p.openStream(s.who)
	if gone {
		return notFound(req, nil) // ended or retired since the lookup: re-initialize
	}
	if sk == nil {
		return respond(req, http.StatusConflict, nil, errorReply(nil, reply.CodeInvalidRequest, "Conflict: only one GET stream per session", ""))
	}
	ctx, cancel := context.WithCancel(req.Context())
	pr, pw := io.Pipe()
	go func() {
		defer sk.msgs.close() // what is left queued leaves the budget
		defer s.p.closeStream(sk)
		defer cancel()
		for {
			select {
			case m := <-sk.msgs.ch:
				_, err := pw.Write(sseEvent(sk.msgs.taken(m)))
				sk.msgs.sent(m)
				if err != nil {
					return
				}
			case <-sk.done:
				_ = pw.Close()
				return
			case <-ctx.Done():
				_ = pw.CloseWithError(ctx.Err())
				return
			}
		}
	}()
	return stream(req, nil, pr, cancel)
}

// delete ends a legacy session and its process.
func (t *Transport) delete(req *http.Request, sid string) *http.Response {
	if sid == "" {
		return respond(req, http.StatusBadRequest, nil, errorReply(nil, reply.CodeInvalidRequest, "Bad Request: Mcp-Session-Id required", ""))
	}
	s := t.session(sid)
	if s == nil {
		return notFound(req, nil)
	}
	t.endSession(s)
	return respond(req, http.StatusOK, nil, nil)
}

// acceptsSSE reports whether req's Accept lists text/event-stream, its
// type and subtype compared in ASCII, case-insensitively (RFC 9110 8.3.1),
// spaces and tabs (OWS) around it cut.
func acceptsSSE(req *http.Request) bool {
	for _, v := range req.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if plainhead.EqualFold(strings.Trim(mt, " \t"), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// sseEvent frames one message as package reply frames every event of
// the sidecar's own. Events carry no id: the adapter keeps no history, so
// it offers no Last-Event-ID resumption.
func sseEvent(m []byte) []byte { return reply.Event(m) }

func notFound(req *http.Request, id json.RawMessage) *http.Response {
	return respond(req, http.StatusNotFound, nil, errorReply(id, codeSessionNotFound, "Session not found", ""))
}

// respond is a complete reply: body as JSON, or no body when nil.
func respond(req *http.Request, status int, hdr http.Header, body []byte) *http.Response {
	h := http.Header{}
	for k, v := range hdr {
		h[k] = v
	}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{StatusCode: status, Status: strconv.Itoa(status) + " " + http.StatusText(status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req, Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

// stream is a 200 SSE reply read from body; closing it ends the exchange.
func stream(req *http.Request, hdr http.Header, body io.ReadCloser, cancel func()) *http.Response {
	h := http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	for k, v := range hdr {
		h[k] = v
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Request: req, Header: h, Body: cancelOnClose{body, cancel}, ContentLength: -1}
}

type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c cancelOnClose) Close() error {
	c.cancel()
	return c.ReadCloser.Close()
}
