package onbehalf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"golang.org/x/net/http/httpguts"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Held is a session the sidecar holds on the upstream for its callers (the
// era bridge's legacy sessions): where it lives and the headers every
// request on it carries.
type Held struct {
	// URL is the upstream endpoint the session was opened on.
	URL string
	// Caller are the headers of the caller it was opened for
	// (CallerHeaders: credentials, trace, user agent, network identity).
	Caller http.Header
	// ID is the session's Mcp-Session-Id; "" before the upstream named one
	// (or when it names none).
	ID string
	// Version is the protocol version negotiated on it; "" before.
	Version string
}

// Header returns the headers of a request on s: the caller's, the
// session's Mcp-Session-Id and MCP-Protocol-Version when set.
func (s Held) Header() http.Header {
	h := s.Caller.Clone()
	if h == nil {
		h = http.Header{}
	}
	if s.ID != "" {
		h.Set("Mcp-Session-Id", s.ID)
	}
	if s.Version != "" {
		h.Set("Mcp-Protocol-Version", s.Version)
	}
	return h
}

// Initialize is the legacy initialize that opens s for its caller: the
// caller's capabilities and clientInfo as it spelled them (encoded JSON,
// passed as they are), protocolVersion version, and none of s's session
// headers (it has none yet). It is returned with its id, fresh (NewID):
// only a reply carrying it answers the initialize (ReadReply).
func (s Held) Initialize(ctx context.Context, version string, caps, info json.RawMessage) (*http.Request, json.RawMessage, error) {
	id := NewID("session")
	body := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	body = rewrite.AppendString(append(body, `,"method":"initialize","params":{"protocolVersion":`...), version)
	body = append(append(body, `,"capabilities":`...), caps...)
	body = append(append(append(body, `,"clientInfo":`...), info...), "}}"...)
	if !rewrite.Valid(body) {
		return nil, nil, errInvalidParams
	}
	opening := Held{URL: s.URL, Caller: s.Caller}
	req, err := opening.Post(ctx, body)
	return req, id, err
}

// Initialized is the notifications/initialized that completes s's
// opening, on s (its id and version known now).
func (s Held) Initialized(ctx context.Context) (*http.Request, error) {
	return s.Post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// errInvalidParams: what a caller gave to go in a request is not JSON.
var errInvalidParams = errors.New("onbehalf: the caller's capabilities or clientInfo are not JSON")

// Post is the POST of body, one JSON-RPC message (the session's
// initialize, notifications/initialized, an answer to a server's request,
// a subscribe), on s.
func (s Held) Post(ctx context.Context, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = s.Header()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req, nil
}

// Listen is the GET that opens s's stream of server messages.
func (s Held) Listen(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header = s.Header()
	req.Header.Set("Accept", "text/event-stream")
	return req, nil
}

// Resume is the GET that opens s's stream of server messages anew after
// one ended, with Last-Event-ID lastEventID (the last id the server gave
// an event on it) so the server can replay what it sent since
// (2025-11-25 basic/transports, resumability); none when lastEventID is ""
// or could not be a header's value.
func (s Held) Resume(ctx context.Context, lastEventID string) (*http.Request, error) {
	req, err := s.Listen(ctx)
	if err == nil && lastEventID != "" && httpguts.ValidHeaderFieldValue(lastEventID) {
		req.Header.Set("Last-Event-Id", lastEventID)
	}
	return req, err
}

// End is the DELETE that ends s on the upstream.
func (s Held) End(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header = s.Header()
	return req, nil
}
