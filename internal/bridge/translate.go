package bridge

import (
	"encoding/json"
	"slices"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// _meta keys of a modern request that the legacy era carries in the
// session instead (2026-07-28 schema, RequestMetaObject).
const (
	metaProtocol   = "io.modelcontextprotocol/protocolVersion"
	metaClientCaps = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo = "io.modelcontextprotocol/clientInfo"
	metaLogLevel   = "io.modelcontextprotocol/logLevel"
	metaServerInfo = "io.modelcontextprotocol/serverInfo"
	metaSubID      = "io.modelcontextprotocol/subscriptionId"
)

// cacheable are the methods whose 2026-07-28 results are CacheableResult
// (ttlMs and cacheScope required): server/discover, the four lists and
// resources/read. prompts/get and tools/call results are not.
var cacheable = []string{"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}

// LegacyRequest returns msg as the legacy era sends it: the per-request
// era fields of params._meta (protocolVersion, clientCapabilities,
// clientInfo, logLevel) removed, since the session carries them; other
// _meta keys (progressToken, …) stay. A legacy server that saw
// protocolVersion there would take the request for a modern one.
func LegacyRequest(msg rewrite.Message) ([]byte, error) {
	out := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`)}
	if msg.ID != nil {
		out["id"] = msg.ID
	}
	method, _ := json.Marshal(msg.Method)
	out["method"] = method
	if len(msg.Params) > 0 {
		var params map[string]json.RawMessage
		if err := json.Unmarshal(msg.Params, &params); err != nil {
			return nil, err
		}
		if raw, ok := params["_meta"]; ok {
			var meta map[string]json.RawMessage
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, err
			}
			for _, k := range []string{metaProtocol, metaClientCaps, metaClientInfo, metaLogLevel} {
				delete(meta, k)
			}
			if len(meta) == 0 {
				delete(params, "_meta")
			} else {
				params["_meta"], _ = json.Marshal(meta)
			}
		}
		out["params"], _ = json.Marshal(params)
	}
	return json.Marshal(out)
}

// ModernReply returns a legacy server's reply to method as the modern era
// shapes it: a result gets resultType "complete", a cacheable one ttlMs 0
// and cacheScope scope, and every one the server's serverInfo in _meta,
// each only when absent; a resource-not-found error (-32002) becomes
// -32602. Anything else, and anything it cannot parse, is returned as it
// was.
func ModernReply(method string, reply []byte, serverInfo json.RawMessage, scope string) []byte {
	m, err := rewrite.ParseMessage(reply)
	if err != nil {
		return reply
	}
	switch m.Kind {
	case rewrite.KindResponse:
		var result map[string]json.RawMessage
		if json.Unmarshal(m.Result, &result) != nil || result == nil {
			return reply
		}
		completeResult(result, slices.Contains(cacheable, method), serverInfo, scope)
		return response(m.ID, result)
	case rewrite.KindError:
		var e map[string]json.RawMessage
		if json.Unmarshal(m.Error, &e) != nil || string(e["code"]) != "-32002" {
			return reply
		}
		e["code"] = json.RawMessage("-32602")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": e})
		return b
	}
	return reply
}

func completeResult(result map[string]json.RawMessage, cacheable bool, serverInfo json.RawMessage, scope string) {
	if _, ok := result["resultType"]; !ok {
		result["resultType"] = json.RawMessage(`"complete"`)
	}
	if cacheable {
		if _, ok := result["ttlMs"]; !ok {
			result["ttlMs"] = json.RawMessage("0")
		}
		if _, ok := result["cacheScope"]; !ok {
			result["cacheScope"], _ = json.Marshal(scope)
		}
	}
	if len(serverInfo) == 0 {
		return
	}
	var meta map[string]json.RawMessage
	if raw, ok := result["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return // not an object: not ours to fix
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if _, ok := meta[metaServerInfo]; !ok {
		meta[metaServerInfo] = serverInfo
		result["_meta"], _ = json.Marshal(meta)
	}
}

func response(id json.RawMessage, result any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	return b
}

// initResult is what the bridge keeps of an initialize result.
type initResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      json.RawMessage `json:"serverInfo"`
	Instructions    *string         `json:"instructions"`
}

// Discover builds the server/discover reply (2026-07-28 DiscoverResult) of
// a legacy server from its initialize result: supportedVersions is
// 2026-07-28 (which the bridge speaks for it) then the legacy versions it
// named; capabilities, instructions and serverInfo are its own.
func Discover(id json.RawMessage, init initResult, legacyVersions []string, scope string) []byte {
	versions := []string{ModernVersion}
	for _, v := range legacyVersions {
		if v < ModernVersion && !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	if init.ProtocolVersion != "" && !slices.Contains(versions, init.ProtocolVersion) {
		versions = append(versions, init.ProtocolVersion)
	}
	caps := init.Capabilities
	if len(caps) == 0 || caps[0] != '{' {
		caps = json.RawMessage("{}")
	}
	result := map[string]json.RawMessage{"capabilities": caps}
	result["supportedVersions"], _ = json.Marshal(versions)
	if init.Instructions != nil {
		result["instructions"], _ = json.Marshal(*init.Instructions)
	}
	completeResult(result, true, init.ServerInfo, scope)
	return response(id, result)
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
func (f Filter) Honoured(caps json.RawMessage) Filter {
	var c struct {
		Tools     struct{ ListChanged bool } `json:"tools"`
		Prompts   struct{ ListChanged bool } `json:"prompts"`
		Resources struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		} `json:"resources"`
	}
	_ = json.Unmarshal(caps, &c)
	out := Filter{
		ToolsListChanged:     f.ToolsListChanged && c.Tools.ListChanged,
		PromptsListChanged:   f.PromptsListChanged && c.Prompts.ListChanged,
		ResourcesListChanged: f.ResourcesListChanged && c.Resources.ListChanged,
	}
	if c.Resources.Subscribe {
		out.ResourceSubscriptions = f.ResourceSubscriptions
	}
	return out
}

// ParseListen reads a subscriptions/listen request's filter.
func ParseListen(params json.RawMessage) (Filter, error) {
	var p struct {
		Notifications Filter `json:"notifications"`
	}
	err := json.Unmarshal(params, &p)
	return p.Notifications, err
}

// Acknowledged is the first event of a listen stream: the filter the
// bridge honours, with the subscription's id.
func Acknowledged(subID json.RawMessage, honoured Filter) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"notifications": honoured, "_meta": map[string]json.RawMessage{metaSubID: subID}}})
	return b
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
	var params map[string]json.RawMessage
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &params) != nil {
		return nil, false
	}
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	var meta map[string]json.RawMessage
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		meta = nil
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[metaSubID] = subID
	params["_meta"], _ = json.Marshal(meta)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": m.Method, "params": params})
	return b, true
}

// ErrorReply is a JSON-RPC error response.
func ErrorReply(id json.RawMessage, code int, message string, data any) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	e := map[string]any{"code": code, "message": message}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	return b
}
