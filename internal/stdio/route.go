package stdio

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// read reads the process's stdout until it closes, routing each message.
// A line that is not a JSON-RPC message (a banner, a log line printed to
// the wrong stream) is skipped and counted, never forwarded; a line over
// the limit fails the request it answers, if it names one, and the pipe
// goes on.
func (p *pipe) read() {
	lr := newLineReader(p.proc.out, p.t.MaxLine)
	for {
		line, long, err := lr.next()
		if errors.Is(err, errLineTooLong) {
			p.overlong(long)
			continue
		}
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		msg, err := rewrite.ParseMessage(line)
		if err != nil || msg.Kind == rewrite.KindInvalid {
			p.t.event(EventSkippedLine)
			continue
		}
		p.route(msg)
	}
	// The server may end the connection by closing stdout (and exiting).
	p.end()
}

// route hands one message from the process to whoever it is for.
func (p *pipe) route(msg rewrite.Message) {
	switch msg.Kind {
	case rewrite.KindResponse, rewrite.KindError:
		c := p.take(string(msg.ID))
		if c == nil {
			p.t.event(EventUnmatchedReply) // a reply to a call given up on
			return
		}
		out, err := rewrite.SetKey(msg.Raw, []string{"id"}, c.id)
		if err != nil {
			out = c.msgs.force(errorReply(c.id, reply.CodeInternalError, "the stdio upstream sent a malformed reply", "stdio_bad_reply"))
		} else if out, err = c.msgs.charge(c.id, out); err != nil {
			p.t.event(EventDroppedMessage) // past a bound of the budget: the refusal stands for it
		}
		c.final <- out
	case rewrite.KindRequest:
		if p.shared {
			p.answer(msg)
			return
		}
		p.deliver(nil, msg.Raw)
	case rewrite.KindNotification:
		c, out, stale := p.named(msg)
		if stale {
			p.t.event(EventDroppedMessage)
			return
		}
		p.deliver(c, out)
	}
}

// take removes and returns the call with minted id, or nil.
func (p *pipe) take(id string) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.pending[id]
	if c != nil {
		p.dropLocked(c)
	}
	return c
}

// named returns the call a notification names, with the minted value it
// names it by mapped back to the caller's: notifications/progress by its
// progressToken, a 2026-07-28 subscription notification by its _meta
// subscription id (the listen request's id). Nil when it names none.
// stale: on the shared process, it names by a minted value a call no
// longer in flight (answered, timed out, its caller gone while the server
// goes on): it is that call's, so no other caller's request may have it.
func (p *pipe) named(msg rewrite.Message) (c *call, out []byte, stale bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if tok, ok := rewrite.GetKey(msg.Params, []string{"progressToken"}); ok {
		if c := p.tokens[string(tok)]; c != nil {
			if out, err := rewrite.SetKey(msg.Raw, []string{"params", "progressToken"}, c.token); err == nil {
				return c, out, false
			}
		}
		if p.shared {
			return nil, nil, true
		}
	}
	if sub, ok := rewrite.GetKey(msg.Params, []string{"_meta", metaSubscriptionID}); ok && p.shared {
		if c := p.pending[string(sub)]; c != nil && c.listen {
			if out, err := rewrite.SetKey(msg.Raw, []string{"params", "_meta", metaSubscriptionID}, c.id); err == nil {
				return c, out, false
			}
		}
		return nil, nil, true
	}
	return nil, msg.Raw, false
}

// deliver queues out for c. A message naming no call (c nil) goes, as the
// server's own streamable HTTP transport would send it, on the POST stream
// of the one request in flight if there is exactly one, otherwise on a
// legacy session's GET stream; with neither, or past the bounds of the
// stream's queue (a reader that does not keep up), it is dropped and
// counted.
// A subscriptions/listen is never that one request: each notification on
// its stream names it (_meta subscriptionId), and on the shared process it
// may be another caller's than the request that left the message behind.
func (p *pipe) deliver(c *call, out []byte) {
	p.mu.Lock()
	if c == nil && len(p.pending) == 1 {
		for _, only := range p.pending {
			if !only.listen {
				c = only
			}
		}
	}
	if c == nil && p.stream != nil {
		if !p.stream.msgs.put(out) {
			p.t.event(EventDroppedMessage)
		}
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	if c == nil || !c.msgs.put(out) {
		p.t.event(EventDroppedMessage)
	}
}

// answer replies to a request the shared process sends: 2026-07-28 has no
// server-to-client requests outside a call's result (input_required), so
// ping gets {} and anything else method-not-found.
func (p *pipe) answer(msg rewrite.Message) {
	out := reply.ResultMessage(msg.ID, json.RawMessage("{}"))
	if msg.Method != "ping" {
		out = errorReply(msg.ID, reply.CodeMethodNotFound, "the sidecar does not carry server requests from a shared stdio process", "")
	}
	_ = p.send(out)
}

// overlong fails the call an over-limit line answers: the minted id is
// looked for in the line's first and last bytes (reply objects put their
// id at one end or the other). A line that names no call is dropped.
func (p *pipe) overlong(long *overlong) {
	p.t.event(EventLineTooLong)
	p.mu.Lock()
	var hit string
	for id := range p.pending {
		if bytes.Contains(long.head, []byte(id)) || bytes.Contains(long.tail, []byte(id)) {
			hit = id
			break
		}
	}
	p.mu.Unlock()
	if c := p.take(hit); c != nil {
		c.final <- c.msgs.force(errorReply(c.id, reply.CodeInternalError, "the stdio upstream's reply is over the line limit", "stdio_line_too_long"))
	}
}

// errorReply is a JSON-RPC error with id (null when nil), message and,
// when reason is set, data.reason, as package reply encodes every error
// of the sidecar's own.
func errorReply(id json.RawMessage, code int, message, reason string) []byte {
	e := &reply.Error{Code: code, Message: message}
	if reason != "" {
		e.Data = map[string]string{"reason": reason}
	}
	return reply.ErrorMessage(id, e)
}
