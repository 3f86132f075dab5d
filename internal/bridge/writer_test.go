package bridge

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// roundTrip sends req through rt and, where rt returns the reply the
// caller gets as its error (a refusal or a failure carrying a
// *reply.Error), writes that reply as the proxy's one writer does: a
// JSON-RPC error with the request's own id, its status and Retry-After.
// The bridge's tests read what a client would.
func roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	body, err := requestBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	var e *reply.Error
	if err == nil || !errors.As(err, &e) {
		return resp, err
	}
	id := json.RawMessage("null")
	if m, perr := rewrite.ParseMessage(body); perr == nil && m.ID != nil {
		id = m.ID
	}
	out := jsonResponse(req, e.Status, ErrorReply(id, e.Code, e.Message, e.Data))
	if e.RetryAfter > 0 {
		out.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	return out, nil
}
