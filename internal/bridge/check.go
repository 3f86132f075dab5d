package bridge

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// modernMethods are the client requests the 2026-07-28 wire defines (its
// schema's ClientRequest union, with the Skills, agents and tasks
// extensions' methods). The bridge holds back a legacy stream's headers
// only for a method outside this list, to carry a refusal as HTTP 404.
var modernMethods = []string{
	"server/discover", "subscriptions/listen",
	"tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/templates/list", "resources/read",
	"completion/complete", "tasks/get", "tasks/update", "tasks/cancel",
	"skills/list", "skills/get", "agents/list", "agents/get", "resources/directory/read",
}

// removedMethods are the legacy requests the 2026-07-28 wire removed
// (SEP-2575: the handshake, ping, logging/setLevel and the resource
// subscriptions, whose work _meta logLevel and subscriptions/listen now
// do; SEP-2663: tasks/list and tasks/result). A legacy upstream would
// still answer them, so the bridge refuses them itself, as a modern server
// must: HTTP 404 with -32601.
var removedMethods = []string{
	"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
	"tasks/list", "tasks/result",
}

// Refusal is the bridge's own answer to a modern request it will not
// carry: an HTTP status and a JSON-RPC error.
type Refusal struct {
	Status  int
	Code    int
	Message string
	Data    any
}

// CheckModern applies the 2026-07-28 per-request rules a modern server
// enforces before it dispatches (SEP-2575, SEP-2243, SEP-2322), in the
// order the conformance suite expects them: wire.CheckRequest's (both era
// fields of _meta present, -32602; the routing headers present and
// agreeing with the body, Mcp-Name decoded, -32020; the one modern
// version, -32022), then client capabilities an object (-32602), a method
// the wire still has (-32601, HTTP 404), and inputResponses, when
// present, an object (-32602). It returns nil for a request the bridge
// may carry.
func CheckModern(h http.Header, msg rewrite.Message) *Refusal {
	if _, e := wire.CheckRequest(h, msg); e != nil {
		return &Refusal{e.Status, e.Code, e.Message, e.Data}
	}
	if caps, _ := rewrite.GetKey(msg.Params, []string{"_meta", metaClientCaps}); !rewrite.IsObject(caps) {
		return &Refusal{http.StatusBadRequest, reply.CodeInvalidParams, metaClientCaps + " must be an object", nil}
	}
	if msg.Kind == rewrite.KindRequest && slices.Contains(removedMethods, msg.Method) {
		return &Refusal{http.StatusNotFound, reply.CodeMethodNotFound, "method " + strconv.Quote(msg.Method) + " is not part of protocol version " + ModernVersion, nil}
	}
	if ir, ok := rewrite.GetKey(msg.Params, []string{"inputResponses"}); ok && !validInputResponses(ir) {
		return &Refusal{http.StatusBadRequest, reply.CodeInvalidParams, "inputResponses must be an object whose values are objects", nil}
	}
	return nil
}

// validInputResponses reports whether raw is an InputResponses map: an
// object of objects (2026-07-28 schema).
func validInputResponses(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if !rewrite.IsObject(raw) || json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, v := range m {
		if !rewrite.IsObject(v) {
			return false
		}
	}
	return true
}

// replyStatus is the HTTP status a bridged JSON body travels with: 404
// for a method-not-found error (the 2026-07-28 wire's rule, SEP-2575),
// otherwise status unchanged.
func replyStatus(body []byte, status int) int {
	m, err := rewrite.ParseMessage(body)
	if err != nil || m.Kind != rewrite.KindError {
		return status
	}
	var code int // as the client reads it: the exact name (decodeAt)
	if found, ok := decodeAt(m.Error, &code, "code"); found && ok && code == reply.CodeMethodNotFound {
		return http.StatusNotFound
	}
	return status
}
