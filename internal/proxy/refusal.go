package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// bodyHeaders describe the upstream's body, which a refusal replaces with a
// JSON-RPC error of its own: they are not passed on.
var bodyHeaders = [...]string{"Content-Length", "Content-Type", "Content-Encoding", "Content-Range", "Etag", "Last-Modified", "Accept-Ranges"}

// writeRefusal passes on to the caller the upstream's refusal (status,
// header, body) of a request the sidecar made on the caller's behalf
// (package onbehalf): the gate's probe, or a read or listing of package
// methods. The caller gets
// the upstream's status and its end-to-end headers (WWW-Authenticate
// first: an OAuth-aware client starts its flow from it) but always a
// JSON-RPC error carrying the caller's own id: the body answered the
// sidecar's request, not the caller's, and its id is not the caller's. A
// body that is a JSON-RPC error keeps its error object (code, message,
// data); any other body becomes an error with data.reason
// "upstream_refused" and the upstream's status, and its text, when short
// and printable, in the message.
func writeRefusal(w http.ResponseWriter, callerID json.RawMessage, ref *onbehalf.Refusal) {
	status, body := ref.Status, ref.Body
	h := w.Header()
	passed := ref.Header.Clone()
	removeHopHeaders(passed)
	for _, k := range bodyHeaders {
		delete(passed, k)
	}
	for k, v := range passed {
		h[k] = v
	}
	if len(callerID) == 0 {
		callerID = json.RawMessage("null")
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   json.RawMessage `json:"error"`
	}{"2.0", callerID, refusalError(status, body)}
	b, _ := json.Marshal(out) // a RawMessage from ParseMessage or mustJSON: valid
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// refusalError is the error object of a refusal with body.
func refusalError(status int, body []byte) json.RawMessage {
	if m, err := rewrite.ParseMessage(body); err == nil && m.Kind == rewrite.KindError {
		return m.Error
	}
	msg := "upstream refused the request: HTTP " + strconv.Itoa(status)
	if t := shortText(body); t != "" {
		msg += ": " + t
	}
	b, _ := json.Marshal(map[string]any{"code": reply.CodeInternalError, "message": msg,
		"data": map[string]any{"reason": "upstream_refused", "status": status}})
	return b
}

// shortText is body as one short line of text, or "" when it is not one
// (HTML, binary, long).
func shortText(body []byte) string {
	t := strings.TrimSpace(string(body))
	if len(t) == 0 || len(t) > 200 || !utf8.ValidString(t) || strings.ContainsAny(t, "\r\n<") {
		return ""
	}
	for _, c := range t {
		if c < 0x20 || c == 0x7f {
			return ""
		}
	}
	return t
}
