package onbehalf

import (
	"bytes"
	"context"
	"net/http"
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

// End is the DELETE that ends s on the upstream.
func (s Held) End(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header = s.Header()
	return req, nil
}
