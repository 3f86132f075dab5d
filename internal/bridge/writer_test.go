package bridge

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// roundTrip sends req through rt and, where rt returns a value for the
// proxy to write instead of a response (its own answer, a refusal or a
// failure carrying a *reply.Error, the upstream's refusal of a session),
// makes the reply a client would read from it, with the request's own id
// (package reply builds the bytes; the proxy, which this package cannot
// import, writes them). The bridge's tests read what a client would.
func roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	body, err := requestBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		return resp, nil
	}
	id := json.RawMessage("null")
	if m, perr := rewrite.ParseMessage(body); perr == nil && m.ID != nil {
		id = m.ID
	}
	var a *reply.Answer
	var e *reply.Error
	var ref *onbehalf.Refusal
	switch {
	case errors.As(err, &a):
		return a.Response(req, id), nil
	case errors.As(err, &ref):
		// The proxy keeps a JSON-RPC error's object (writeRefusal).
		obj := json.RawMessage(`{"code":-32603,"message":"upstream refused the request"}`)
		if m, perr := rewrite.ParseMessage(ref.Body); perr == nil && m.Kind == rewrite.KindError {
			obj = m.Error
		}
		out := (&reply.Answer{Status: ref.Status, ErrorObject: obj}).Response(req, id)
		if v := ref.Header.Get("Www-Authenticate"); v != "" {
			out.Header.Set("Www-Authenticate", v)
		}
		return out, nil
	case errors.As(err, &e):
		obj, _ := rewrite.GetKey(reply.ErrorMessage(id, e), []string{"error"})
		out := (&reply.Answer{Status: e.Status, ErrorObject: obj}).Response(req, id)
		if e.RetryAfter > 0 {
			out.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		return out, nil
	}
	return nil, err
}

// writer is rt with what it returns for the proxy to write made into
// replies (roundTrip): the proxy's part, in front of a test's
// httputil.ReverseProxy.
type writer struct{ rt http.RoundTripper }

func (w writer) RoundTrip(req *http.Request) (*http.Response, error) { return roundTrip(w.rt, req) }
