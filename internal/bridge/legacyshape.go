package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The pure half of the legacy front (legacyfront.go): the shapes a legacy
// client sees of a modern-only upstream.

// BridgedLegacyVersions are the legacy protocol versions the legacy front
// negotiates, newest first: the revisions of the Streamable HTTP transport
// whose requests it can carry one by one. 2024-11-05 used the HTTP+SSE
// transport, which the sidecar does not serve.
var BridgedLegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// NegotiateLegacy is the legacy initialize rule (2025-11-25 lifecycle,
// version negotiation): the version the client asked for when the front
// can serve it, else the newest one it can.
func NegotiateLegacy(requested string) string {
	if slices.Contains(BridgedLegacyVersions, requested) {
		return requested
	}
	return BridgedLegacyVersions[0]
}

// initializeParams reads a legacy initialize's params (valid JSON, or
// none) as a legacy server reads them: member names matched exactly, the
// last of duplicates counting, as go-sdk decodes them and a JavaScript
// object is keyed. ok is false when params is neither none, null nor an
// object, or protocolVersion is there and neither a string nor null.
func initializeParams(params json.RawMessage) (version string, caps, info json.RawMessage, ok bool) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return "", nil, nil, true
	}
	if !rewrite.IsObject(p) {
		return "", nil, nil, false
	}
	if raw, found := rewrite.GetKey(p, []string{"protocolVersion"}); found && json.Unmarshal(raw, &version) != nil {
		return "", nil, nil, false
	}
	caps, _ = rewrite.GetKey(p, []string{"capabilities"})
	info, _ = rewrite.GetKey(p, []string{"clientInfo"})
	return version, caps, info, true
}

// frontServerInfo names the upstream when its discover result names no one
// (InitializeResult requires serverInfo).
var frontServerInfo = json.RawMessage(`{"name":"skills-sidecar-era-bridge","version":"1"}`)

// InitializeFromDiscover builds the initialize reply (legacy
// InitializeResult) to id from a modern upstream's server/discover result:
// its capabilities, instructions and serverInfo (which 2026-07-28 carries
// in _meta), and version, the negotiated legacy protocol version. The
// cache fields and resultType of the discover result have no place in it.
func InitializeFromDiscover(discover json.RawMessage, version string) (json.RawMessage, error) {
	// Its members are read with their names matched exactly, the last of
	// duplicates counting, as a modern client reads them.
	if !rewrite.IsObjectOrNull(discover) {
		return nil, errors.New("server/discover result is not an object")
	}
	var instructions *string
	var meta map[string]json.RawMessage
	if _, ok := decodeAt(discover, &instructions, "instructions"); !ok {
		return nil, errors.New("server/discover result: instructions is not a string")
	}
	if _, ok := decodeAt(discover, &meta, "_meta"); !ok {
		return nil, errors.New("server/discover result: _meta is not an object")
	}
	caps, _ := rewrite.GetKey(discover, []string{"capabilities"})
	if !rewrite.IsObject(caps) {
		caps = json.RawMessage("{}")
	}
	info := meta[metaServerInfo]
	if !rewrite.IsObject(info) {
		info, _ = rewrite.GetKey(discover, []string{"serverInfo"})
	}
	if !rewrite.IsObject(info) {
		info = frontServerInfo
	}
	v, _ := json.Marshal(version)
	result := map[string]json.RawMessage{"protocolVersion": v, "capabilities": caps, "serverInfo": info}
	if instructions != nil {
		result["instructions"], _ = json.Marshal(*instructions)
	}
	return marshal(result), nil
}

// ModernParams returns a legacy request's params with the per-request
// _meta of the 2026-07-28 wire added from the session: protocolVersion,
// clientCapabilities, clientInfo and, when the session set one with
// logging/setLevel, logLevel. Keys the request's _meta already has (a
// progressToken, …) stay; the era keys are the session's.
//
// The bytes are those of encoding/json marshalling the params as a map
// (keys sorted, compact, <, > and & escaped), as the bridge has always
// sent them; they are written directly when every key is plain (see
// plainKey) and none repeats, and by encoding/json otherwise
// (modernParamsMarshal), FuzzModernParams holding the two to the same bytes.
func ModernParams(params json.RawMessage, caps, info json.RawMessage, logLevel string) (json.RawMessage, error) {
	if out, ok := modernParamsDirect(params, caps, info, logLevel); ok {
		return out, nil
	}
	return modernParamsMarshal(params, caps, info, logLevel)
}

// modernParamsMarshal is ModernParams by encoding/json.
func modernParamsMarshal(params json.RawMessage, caps, info json.RawMessage, logLevel string) (json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(params)) > 0 && string(bytes.TrimSpace(params)) != "null" {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		if p == nil {
			p = map[string]json.RawMessage{}
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
	}
	meta[metaProtocol], _ = json.Marshal(ModernVersion)
	meta[metaClientCaps] = caps
	meta[metaClientInfo] = info
	if logLevel != "" {
		meta[metaLogLevel], _ = json.Marshal(logLevel)
	}
	p["_meta"], _ = json.Marshal(meta)
	return json.Marshal(p)
}

// ModernRequest is a legacy request as the modern wire sends it: the same
// id and method, params from ModernParams. Its bytes are encoding/json's
// of the request as a map (see ModernParams), written directly when the
// method is a plain string and the id and params are JSON.
func ModernRequest(msg rewrite.Message, params json.RawMessage) []byte {
	if !plainKey([]byte(msg.Method)) || (msg.ID != nil && !rewrite.Valid(msg.ID)) || !rewrite.Valid(params) {
		return modernRequestMarshal(msg, params)
	}
	out := make([]byte, 0, len(`{"id":,"jsonrpc":"2.0","method":"","params":}`)+len(msg.ID)+len(msg.Method)+len(params))
	out = append(out, '{')
	if msg.ID != nil {
		out = appendMarshaled(append(out, `"id":`...), msg.ID)
		out = append(out, ',')
	}
	out = append(out, `"jsonrpc":"2.0","method":"`...)
	out = append(out, msg.Method...)
	out = appendMarshaled(append(out, `","params":`...), params)
	return append(out, '}')
}

// modernRequestMarshal is ModernRequest by encoding/json.
func modernRequestMarshal(msg rewrite.Message, params json.RawMessage) []byte {
	out := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "params": params}
	if msg.ID != nil {
		out["id"] = msg.ID
	}
	out["method"], _ = json.Marshal(msg.Method)
	b, _ := json.Marshal(out)
	return b
}

// LegacyReply returns a modern upstream's body to method as a legacy
// client reads it, and whether it changed. Results pass as they are, byte
// for byte: the legacy schema's Result allows fields it does not name, so
// resultType, ttlMs, cacheScope and _meta serverInfo are extras a legacy
// client ignores, and re-encoding would risk the bytes. Two things change:
//   - a result with resultType "input_required" (the upstream asks the
//     client for sampling, elicitation or roots) becomes a -32603 error
//     with data.reason "input_required_not_bridged": a legacy client would
//     take it for a complete result;
//   - error codes the modern wire renumbered go back: -32020 HeaderMismatch
//     to -32001, -32021 MissingRequiredClientCapability to -32003, -32022
//     UnsupportedProtocolVersion to -32004, and on resources/read a -32602
//     that names the resource as not found (data.uri, or "not found" in the
//     message, as the 2026-07-28 resources page answers it) to -32002.
func LegacyReply(method string, body []byte) ([]byte, bool) {
	m, err := rewrite.ParseMessage(body)
	if err != nil {
		return body, false
	}
	if out, changed := legacyReply(method, m); changed {
		return out, true
	}
	return body, false
}

// legacyReply is LegacyReply of a reply already parsed, m: the bridge's
// relay has parsed it to know it for the response, and does not parse it
// again. Unchanged, it returns m.Raw.
func legacyReply(method string, m rewrite.Message) ([]byte, bool) {
	switch m.Kind {
	case rewrite.KindResponse:
		raw, _ := rewrite.GetKey(m.Result, []string{"resultType"})
		if rt, _ := rewrite.StringBytes(raw); string(rt) != "input_required" { // compared, not copied
			return m.Raw, false
		}
		return reply.ErrorMessage(m.ID, &reply.Error{Code: reply.CodeInternalError, Message: "the upstream asked the client for input (input_required), which the era bridge does not carry to legacy clients",
			Data: map[string]string{"reason": "input_required_not_bridged"}}), true
	case rewrite.KindError:
		e := LegacyError(method, m.Error)
		if bytes.Equal(e, m.Error) {
			return m.Raw, false
		}
		return reply.ErrorObjectMessage(m.ID, e), true
	}
	return m.Raw, false
}

// LegacyError is the error object obj of a modern reply to method with
// its code renumbered for the legacy wire (LegacyReply), or obj itself
// when nothing changes.
func LegacyError(method string, obj json.RawMessage) json.RawMessage {
	var e map[string]json.RawMessage
	if json.Unmarshal(obj, &e) != nil {
		return obj
	}
	var code int
	if json.Unmarshal(e["code"], &code) != nil {
		return obj
	}
	to := legacyCode(method, code, e)
	if to == code {
		return obj
	}
	e["code"], _ = json.Marshal(to)
	b, _ := json.Marshal(e)
	return b
}

func legacyCode(method string, code int, e map[string]json.RawMessage) int {
	switch code {
	case reply.CodeHeaderMismatch:
		return reply.CodeLegacyHeaderMismatch
	case reply.CodeMissingClientCapability:
		return reply.CodeLegacyMissingClientCap
	case reply.CodeUnsupportedVersion:
		return reply.CodeLegacyUnsupportedVersion
	case reply.CodeInvalidParams:
		if method != "resources/read" {
			return code
		}
		var msg string
		_ = json.Unmarshal(e["message"], &msg)
		if _, ok := rewrite.GetKey(e["data"], []string{"uri"}); ok || strings.Contains(strings.ToLower(msg), "not found") {
			return reply.CodeResourceNotFound
		}
	}
	return code
}

// ListenFilter is the subscriptions/listen request that stands for a
// legacy session's GET stream: every list_changed kind (the upstream
// acknowledges the ones it can deliver) and the session's resource
// subscriptions, with the session's _meta.
func ListenFilter(id json.RawMessage, subs []string, caps, info json.RawMessage) []byte {
	f := Filter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: subs}
	params, _ := json.Marshal(map[string]any{"notifications": f})
	params, _ = ModernParams(params, caps, info, "")
	b, _ := json.Marshal(map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": id,
		"method": json.RawMessage(`"subscriptions/listen"`), "params": params})
	return b
}

// LegacyNotification returns an event of a listen stream as the legacy
// GET stream carries it, or false for one it does not: the
// acknowledgement (the legacy stream has none) and anything that is not
// a notification. A notification passes byte for byte: its
// _meta subscriptionId is an extra key a legacy client ignores.
func LegacyNotification(data []byte) bool {
	m, err := rewrite.ParseMessage(data)
	return err == nil && m.Kind == rewrite.KindNotification && m.Method != "notifications/subscriptions/acknowledged"
}
