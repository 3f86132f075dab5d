package onbehalf

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// forwardedHeaders are the caller's headers, besides its credentials, that
// travel with a request made on its behalf: its session and era, and the
// trace it is part of. (Its network identity is set by SetForwarded.)
var forwardedHeaders = [...]string{"Mcp-Session-Id", wire.HeaderProtocolVersion, traceParent, traceState}

const traceParent, traceState = "Traceparent", "Tracestate"

// Modern reports whether a request made for the caller of msg goes on
// the 2026-07-28 wire: msg's _meta carries a protocol version, which the
// request copies. It is narrower than wire.ClaimsModern on purpose: a
// request that claims the modern era without that _meta is refused by
// the era check, and what is sent for it meanwhile (the gate's probe) is
// a legacy request its _meta could not make modern. Any other _meta (a
// legacy progressToken) does not make it one.
func Modern(msg rewrite.Message) bool {
	_, ok := rewrite.GetString(msg.Params, "_meta", wire.MetaProtocolVersion)
	return ok
}

// newRequest is the one builder of a request made on a caller's behalf:
// the POST of method with params to u.URL for the caller of r (whose
// JSON-RPC message is caller), returned with the id it carries, a fresh
// one naming purpose (see NewID). On the modern wire params gain the
// caller's _meta, and the request the headers the wire requires:
// MCP-Protocol-Version (the caller's header, else its _meta's version),
// Mcp-Method and, for the methods that name a target, Mcp-Name
// (docs/protocol.md §1). It carries the caller's credentials, session, era and
// trace headers and, through SetForwarded, its network identity exactly as
// a forwarded request does. r's context bounds it.
func (u *Upstream) newRequest(r *http.Request, caller rewrite.Message, purpose, method string, params map[string]json.RawMessage) (*http.Request, json.RawMessage, error) {
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	modern := Modern(caller)
	if modern {
		meta, _ := rewrite.GetKey(caller.Params, []string{"_meta"})
		params["_meta"] = meta
	}
	id := NewID(purpose)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, u.URL.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	CopyHeaders(req.Header, r.Header, u.credentials())
	CopyHeaders(req.Header, r.Header, forwardedHeaders[:])
	SetForwarded(req.Header, r)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if modern {
		if req.Header.Get(wire.HeaderProtocolVersion) == "" {
			v, _ := rewrite.GetString(caller.Params, "_meta", wire.MetaProtocolVersion)
			req.Header.Set(wire.HeaderProtocolVersion, v)
		}
		req.Header.Set(wire.HeaderMethod, method)
		if n, ok := nameOf(method, params); ok {
			req.Header.Set(wire.HeaderName, wire.EncodeHeaderValue(n))
		}
	}
	return req, id, nil
}

// nameOf is the Mcp-Name of a request, before encoding: the param
// wire.NameParam names.
func nameOf(method string, params map[string]json.RawMessage) (string, bool) {
	key := wire.NameParam(method)
	if key == "" {
		return "", false
	}
	var s string
	if raw, ok := params[key]; !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// NewID returns the JSON-RPC id of one request made on a caller's behalf:
// a string naming the purpose and 72 random bits, so no reply to anything
// else (another caller's request, an earlier probe) can pass for its
// answer.
func NewID(purpose string) json.RawMessage {
	var b [9]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id, _ := json.Marshal("skills-sidecar/" + purpose + "/" + base64.RawURLEncoding.EncodeToString(b[:]))
	return id
}

// Errors of ReadReply.
var (
	// ErrNoReply means the reply holds no JSON-RPC response or error: an
	// empty body, something that is not JSON-RPC, or an SSE stream that
	// ended without one.
	ErrNoReply = errors.New("onbehalf: upstream reply carries no response")
	// ErrForeignReply means the reply answers a request other than the
	// one sent: its id is not the request's.
	ErrForeignReply = errors.New("onbehalf: upstream reply answers another request")
	// ErrReplyTooLarge means the reply is longer than the limit.
	ErrReplyTooLarge = errors.New("onbehalf: upstream reply too large")
)

// ReadReply returns the JSON-RPC response or error that answers the
// request whose id is id, from an upstream reply of Content-Type
// contentType: the body itself when it is JSON, or on text/event-stream
// the first event carrying a response or error, after any notifications
// and requests before it. Anything else is an error, never an answer: a
// body that is not one JSON-RPC response or error (ErrNoReply), a response
// or error for another id (ErrForeignReply; an error with id null, which
// JSON-RPC 2.0 §5 sends when the request's id could not be read, is taken
// as the answer), more than limit bytes (ErrReplyTooLarge). The message's
// slices are its own.
func ReadReply(contentType string, body io.Reader, id json.RawMessage, limit int) (rewrite.Message, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	lr := &io.LimitedReader{R: body, N: int64(limit) + 1}
	if mt != "text/event-stream" {
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(lr); err != nil {
			return rewrite.Message{}, err
		}
		if buf.Len() > limit {
			return rewrite.Message{}, ErrReplyTooLarge
		}
		return answerOf(buf.Bytes(), id)
	}
	sr := rewrite.NewReader(lr, limit)
	for {
		ev, err := sr.Next()
		if lr.N <= 0 {
			return rewrite.Message{}, ErrReplyTooLarge
		}
		switch {
		case errors.Is(err, io.EOF):
			return rewrite.Message{}, ErrNoReply
		case err != nil:
			return rewrite.Message{}, err
		}
		m, perr := rewrite.ParseMessage(ev.Data)
		if perr != nil || (m.Kind != rewrite.KindResponse && m.Kind != rewrite.KindError) {
			continue // a notification, a request, a comment or an event that is not ours to judge
		}
		return answerOf(ev.Data, id)
	}
}

// answerOf checks that b is one JSON-RPC response or error answering id.
func answerOf(b []byte, id json.RawMessage) (rewrite.Message, error) {
	m, err := rewrite.ParseMessage(b)
	if err != nil || (m.Kind != rewrite.KindResponse && m.Kind != rewrite.KindError) {
		return rewrite.Message{}, ErrNoReply
	}
	if m.Kind == rewrite.KindError && string(m.ID) == "null" {
		return m, nil
	}
	if !sameID(m.ID, id) {
		return rewrite.Message{}, ErrForeignReply // its id is not repeated: it may be another caller's
	}
	return m, nil
}

// sameID reports whether got is the string id want, whatever escapes got
// is written with. The ids of NewID are strings, so a number never is.
func sameID(got, want json.RawMessage) bool {
	var g, w string
	return json.Unmarshal(got, &g) == nil && json.Unmarshal(want, &w) == nil && g == w
}
