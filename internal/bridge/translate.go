package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// _meta keys of a modern request that the legacy era carries in the
// session instead (2026-07-28 schema, RequestMetaObject).
// (package wire owns them; subscriptionId is the bridge's alone).
const (
	metaProtocol   = wire.MetaProtocolVersion
	metaClientCaps = wire.MetaClientCapabilities
	metaClientInfo = wire.MetaClientInfo
	metaLogLevel   = wire.MetaLogLevel
	metaServerInfo = wire.MetaServerInfo
	metaSubID      = "io.modelcontextprotocol/subscriptionId"
)

// cacheable are the methods whose 2026-07-28 results are CacheableResult
// (ttlMs and cacheScope required): server/discover, the four lists and
// resources/read. prompts/get and tools/call results are not.
var cacheable = []string{"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}

// LegacyRequest returns msg as the legacy era sends it: the per-request
// era fields of params._meta (protocolVersion, clientCapabilities,
// clientInfo, logLevel) removed, since the session carries them, and _meta
// itself when nothing else was in it; other _meta keys (progressToken, …)
// stay. A legacy server that saw protocolVersion there would take the
// request for a modern one. Every other byte is the client's: the edit is
// a splice, never a re-encoding.
func LegacyRequest(msg rewrite.Message) ([]byte, error) {
	out := []byte(msg.Raw)
	if _, ok := rewrite.GetKey(out, []string{"params", "_meta"}); !ok {
		return out, nil
	}
	for _, k := range []string{metaProtocol, metaClientCaps, metaClientInfo, metaLogLevel} {
		next, _, err := rewrite.DeleteKey(out, []string{"params", "_meta", k})
		if err != nil {
			return nil, err
		}
		out = next
	}
	if meta, _ := rewrite.GetKey(out, []string{"params", "_meta"}); emptyObject(meta) {
		next, _, err := rewrite.DeleteKey(out, []string{"params", "_meta"})
		if err != nil {
			return nil, err
		}
		out = next
	}
	return out, nil
}

// emptyObject reports whether b is {} (whitespace allowed inside).
func emptyObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' && len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// ModernReply returns a legacy server's body to method as the modern era
// shapes it: a result gets resultType "complete", a cacheable one ttlMs 0
// and cacheScope scope, and every one the server's serverInfo in _meta,
// each only when absent; a resource-not-found error (-32002) becomes
// -32602. The members are spliced in: every byte the server sent stays as
// it sent it (key order, escapes, number spellings, whitespace). Anything
// else, and anything it cannot parse, is returned as it was.
func ModernReply(method string, body []byte, serverInfo json.RawMessage, scope string) []byte {
	m, err := rewrite.ParseMessage(body)
	if err != nil {
		return body
	}
	switch m.Kind {
	case rewrite.KindResponse:
		out, err := completeResult(body, []string{"result"}, slices.Contains(cacheable, method), serverInfo, scope)
		if err != nil {
			return body
		}
		return out
	case rewrite.KindError:
		if code, _ := rewrite.GetKey(m.Error, []string{"code"}); string(code) != "-32002" {
			return body
		}
		out, err := rewrite.SetKey(body, []string{"error", "code"}, json.RawMessage("-32602"))
		if err != nil {
			return body
		}
		return out
	}
	return body
}

// completeResult adds to the result object at path in msg what a modern
// result needs and lacks (see ModernReply), by splicing. An error means
// the result is not an object.
func completeResult(msg []byte, path []string, cacheable bool, serverInfo json.RawMessage, scope string) ([]byte, error) {
	at := func(k ...string) []string { return append(slices.Clone(path), k...) }
	result, _ := rewrite.GetKey(msg, path)
	if len(result) == 0 || result[0] != '{' {
		return nil, rewrite.ErrNotObject
	}
	add := []struct {
		key   string
		value json.RawMessage
		when  bool
	}{
		{"resultType", json.RawMessage(`"complete"`), true},
		{"ttlMs", json.RawMessage("0"), cacheable},
		{"cacheScope", marshal(scope), cacheable},
	}
	var err error
	for _, a := range add {
		if _, ok := rewrite.GetKey(msg, at(a.key)); a.when && !ok {
			if msg, err = rewrite.SetKey(msg, at(a.key), a.value); err != nil {
				return nil, err
			}
		}
	}
	if len(serverInfo) == 0 {
		return msg, nil
	}
	if meta, ok := rewrite.GetKey(msg, at("_meta")); ok && (len(meta) == 0 || meta[0] != '{') {
		return msg, nil // not an object: not ours to fix
	}
	if _, ok := rewrite.GetKey(msg, at("_meta", metaServerInfo)); ok {
		return msg, nil
	}
	out, err := rewrite.SetKey(msg, at("_meta", metaServerInfo), serverInfo)
	if err != nil {
		return msg, nil // serverInfo is not JSON: leave it out
	}
	return out, nil
}

// marshal encodes v as JSON without escaping <, > and & (encoding/json's
// default), for the messages the bridge writes itself.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the bridge encodes only values that always encode
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// initResult is what the bridge keeps of an initialize result (read by
// readInitResult, not by encoding/json, whose matching of names is folded).
type initResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      json.RawMessage `json:"serverInfo"`
	Instructions    json.RawMessage `json:"instructions"` // a string, as the server spelled it
}

// readInitResult reads a legacy initialize result into init, its member
// names matched exactly and the last of duplicates counting, as a legacy
// client reads them (not folded, as encoding/json matches a struct's
// fields). A result that is not an object, or whose protocolVersion is not
// a string, is an error.
func readInitResult(result json.RawMessage, init *initResult) error {
	if !rewrite.IsObjectOrNull(result) {
		return errors.New("not an object")
	}
	*init = initResult{}
	if _, ok := decodeAt(result, &init.ProtocolVersion, "protocolVersion"); !ok {
		return errors.New("protocolVersion is not a string")
	}
	init.Capabilities, _ = rewrite.GetKey(result, []string{"capabilities"})
	init.ServerInfo, _ = rewrite.GetKey(result, []string{"serverInfo"})
	init.Instructions, _ = rewrite.GetKey(result, []string{"instructions"})
	return nil
}

// Discover builds the server/discover result (2026-07-28 DiscoverResult)
// of a legacy server from its initialize result: supportedVersions is
// 2026-07-28 (which the bridge speaks for it) then the legacy versions it
// named; capabilities, instructions and serverInfo are its own bytes.
func Discover(init initResult, legacyVersions []string, scope string) json.RawMessage {
	versions := []string{ModernVersion}
	for _, v := range legacyVersions {
		if v < ModernVersion && !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	if init.ProtocolVersion != "" && !slices.Contains(versions, init.ProtocolVersion) {
		versions = append(versions, init.ProtocolVersion)
	}
	caps := bytes.TrimSpace(init.Capabilities)
	if len(caps) == 0 || caps[0] != '{' {
		caps = json.RawMessage("{}")
	}
	out := append([]byte(`{"capabilities":`), caps...)
	out = append(append(out, `,"supportedVersions":`...), marshal(versions)...)
	if in := bytes.TrimSpace(init.Instructions); len(in) > 0 && in[0] == '"' {
		out = append(append(out, `,"instructions":`...), in...)
	}
	out = append(out, '}')
	// completeResult edits a result at a path: the result is held under
	// one key for it.
	held := append(append([]byte(`{"r":`), out...), '}')
	if done, err := completeResult(held, []string{"r"}, true, init.ServerInfo, scope); err == nil {
		if r, ok := rewrite.GetKey(done, []string{"r"}); ok {
			return r
		}
	}
	return out
}

// Filter is a subscriptions/listen request's notifications filter
// (2026-07-28 SubscriptionFilter).
type Filter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// Honoured returns the part of f a server with the legacy capabilities
// caps can deliver: a list_changed kind only when it declared listChanged,
// resource subscriptions only when it declared resources.subscribe.
// Member names are matched exactly (last of duplicates counting), as a
// legacy client of the server reads them.
func (f Filter) Honoured(caps json.RawMessage) Filter {
	declared := func(path ...string) bool {
		var b bool
		raw, ok := rewrite.GetKey(caps, path)
		return ok && json.Unmarshal(raw, &b) == nil && b
	}
	out := Filter{
		ToolsListChanged:     f.ToolsListChanged && declared("tools", "listChanged"),
		PromptsListChanged:   f.PromptsListChanged && declared("prompts", "listChanged"),
		ResourcesListChanged: f.ResourcesListChanged && declared("resources", "listChanged"),
	}
	if declared("resources", "subscribe") {
		out.ResourceSubscriptions = f.ResourceSubscriptions
	}
	return out
}

// ParseListen reads a subscriptions/listen request's filter as
// rewrite.ParseListenFilter does (member names matched exactly, as the
// client that wrote them reads them), except that params without a
// notifications object (none, or null) ask for nothing.
func ParseListen(params json.RawMessage) (Filter, error) {
	l, err := rewrite.ParseListenFilter(params)
	if errors.Is(err, rewrite.ErrInvalidRequest) {
		if rewrite.IsObjectOrNull(params) {
			return Filter{}, nil
		}
	}
	if err != nil {
		return Filter{}, err
	}
	return Filter{ToolsListChanged: l.ToolsListChanged, PromptsListChanged: l.PromptsListChanged,
		ResourcesListChanged: l.ResourcesListChanged, ResourceSubscriptions: l.ResourceSubscriptions}, nil
}

// Acknowledged is the first event of a listen stream: the filter the
// bridge honours, with the subscription's id.
func Acknowledged(subID json.RawMessage, honoured Filter) []byte {
	return marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"notifications": honoured, "_meta": map[string]json.RawMessage{metaSubID: subID}}})
}

// ListenNotification returns a notification from the legacy GET stream as
// the listen stream carries it (with _meta subscriptionId), and false when
// the filter did not ask for it: the modern server MUST NOT send kinds the
// client did not request.
func ListenNotification(msg []byte, subID json.RawMessage, f Filter) ([]byte, bool) {
	m, err := rewrite.ParseMessage(msg)
	if err != nil || m.Kind != rewrite.KindNotification {
		return nil, false
	}
	switch m.Method {
	case "notifications/tools/list_changed":
		if !f.ToolsListChanged {
			return nil, false
		}
	case "notifications/prompts/list_changed":
		if !f.PromptsListChanged {
			return nil, false
		}
	case "notifications/resources/list_changed":
		if !f.ResourcesListChanged {
			return nil, false
		}
	case "notifications/resources/updated":
		uri, _ := rewrite.GetString(m.Params, "uri")
		if !slices.Contains(f.ResourceSubscriptions, uri) {
			return nil, false
		}
	default:
		return nil, false
	}
	out, err := rewrite.SetKey(m.Raw, []string{"params", "_meta", metaSubID}, subID)
	if errors.Is(err, rewrite.ErrNotObject) {
		if _, ok := rewrite.GetKey(m.Raw, []string{"params", "_meta"}); ok {
			// _meta is not an object: the modern wire's must be one.
			out, err = rewrite.SetKey(m.Raw, []string{"params", "_meta"}, append(append([]byte(`{"`+metaSubID+`":`), subID...), '}'))
		}
	}
	if err != nil {
		return nil, false
	}
	return out, true
}
