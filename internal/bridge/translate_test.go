package bridge

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return v
}

func TestLegacyRequest(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info","progressToken":"p1"}}}`
	m, _ := rewrite.ParseMessage([]byte(in))
	out, err := LegacyRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"jsonrpc": "2.0", "id": 7.0, "method": "tools/call",
		"params": map[string]any{"name": "add", "arguments": map[string]any{"a": 1.0}, "_meta": map[string]any{"progressToken": "p1"}}}
	if got := decode(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	m, _ = rewrite.ParseMessage([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	out, _ = LegacyRequest(m)
	if got := decode(t, out); !reflect.DeepEqual(got["params"], map[string]any{}) {
		t.Errorf("empty _meta kept: %s", out)
	}
}

// Result shapes from the 2026-07-28 schema: every Result has resultType;
// CacheableResult (server/discover, the lists, resources/read) adds ttlMs
// and cacheScope; CallToolResult and GetPromptResult do not.
func TestModernReply(t *testing.T) {
	info := json.RawMessage(`{"name":"up","version":"2"}`)
	cases := []struct {
		method, in string
		want       map[string]any
	}{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
			map[string]any{"jsonrpc": "2.0", "id": 1.0, "result": map[string]any{"tools": []any{}, "resultType": "complete", "ttlMs": 0.0, "cacheScope": "private",
				"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "up", "version": "2"}}}}},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"k":1}}}`,
			map[string]any{"jsonrpc": "2.0", "id": 1.0, "result": map[string]any{"content": []any{}, "resultType": "complete",
				"_meta": map[string]any{"k": 1.0, "io.modelcontextprotocol/serverInfo": map[string]any{"name": "up", "version": "2"}}}}},
		{"resources/read", `{"jsonrpc":"2.0","id":1,"result":{"contents":[],"ttlMs":5000,"cacheScope":"public","resultType":"complete"}}`,
			map[string]any{"jsonrpc": "2.0", "id": 1.0, "result": map[string]any{"contents": []any{}, "resultType": "complete", "ttlMs": 5000.0, "cacheScope": "public",
				"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "up", "version": "2"}}}}},
		{"resources/read", `{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"x"}}}`,
			map[string]any{"jsonrpc": "2.0", "id": 1.0, "error": map[string]any{"code": -32602.0, "message": "Resource not found", "data": map[string]any{"uri": "x"}}}},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
			map[string]any{"jsonrpc": "2.0", "id": 1.0, "error": map[string]any{"code": -32601.0, "message": "no"}}},
	}
	for _, c := range cases {
		if got := decode(t, ModernReply(c.method, []byte(c.in), info, "private")); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s:\n got %v\nwant %v", c.method, c.in, got, c.want)
		}
	}
	if got := ModernReply("tools/list", []byte("not json"), info, "private"); string(got) != "not json" {
		t.Errorf("unparsable reply changed: %s", got)
	}
}

func TestDiscover(t *testing.T) {
	init := initResult{ProtocolVersion: "2025-06-18", Capabilities: json.RawMessage(`{"tools":{"listChanged":true}}`),
		ServerInfo: json.RawMessage(`{"name":"up","version":"2"}`), Instructions: json.RawMessage(`"use add"`)}
	got := decode(t, Discover(init, []string{"2025-11-25", "2026-07-28", "2025-06-18"}, "private"))
	want := map[string]any{
		"resultType": "complete", "supportedVersions": []any{"2026-07-28", "2025-11-25", "2025-06-18"},
		"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}}, "instructions": "use add",
		"ttlMs": 0.0, "cacheScope": "private",
		"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "up", "version": "2"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestListen(t *testing.T) {
	f, err := ParseListen(json.RawMessage(`{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["a://1"]},"_meta":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := f.Honoured(json.RawMessage(`{"tools":{"listChanged":true},"resources":{"subscribe":true}}`))
	if want := (Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"a://1"}}); !reflect.DeepEqual(h, want) {
		t.Errorf("honoured %+v, want %+v", h, want)
	}
	ack := decode(t, Acknowledged(json.RawMessage(`5`), h))
	if want := map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": map[string]any{
		"notifications": map[string]any{"toolsListChanged": true, "resourceSubscriptions": []any{"a://1"}},
		"_meta":         map[string]any{"io.modelcontextprotocol/subscriptionId": 5.0}}}; !reflect.DeepEqual(ack, want) {
		t.Errorf("ack %v", ack)
	}
	sub := json.RawMessage(`"s"`)
	for in, want := range map[string]bool{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`:                         true,
		`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`:                       false,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a://1"}}`: true,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a://2"}}`: false,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`:          false,
		`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`:                                        false,
	} {
		out, ok := ListenNotification([]byte(in), sub, h)
		if ok != want {
			t.Errorf("%s: delivered %v, want %v", in, ok, want)
			continue
		}
		if ok {
			if id, _ := rewrite.GetString(out, "params", "_meta", "io.modelcontextprotocol/subscriptionId"); id != "s" {
				t.Errorf("%s: no subscriptionId in %s", in, out)
			}
		}
	}
}

func FuzzTranslate(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), "tools/list")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"_meta":5}}`), "resources/read")
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a","_meta":[]}}`), "x")
	f.Fuzz(func(t *testing.T, b []byte, method string) {
		if m, err := rewrite.ParseMessage(b); err == nil && m.Kind == rewrite.KindRequest {
			if out, err := LegacyRequest(m); err == nil {
				if _, err := rewrite.ParseMessage(out); err != nil {
					t.Fatalf("LegacyRequest made invalid JSON-RPC %s from %s", out, b)
				}
			}
		}
		out := ModernReply(method, b, json.RawMessage(`{"name":"n","version":"1"}`), "private")
		if _, err := rewrite.ParseMessage(b); err == nil {
			if _, err := rewrite.ParseMessage(out); err != nil {
				t.Fatalf("ModernReply made invalid JSON-RPC %s from %s", out, b)
			}
		}
		if f, err := ParseListen(b); err == nil {
			_ = f.Honoured(b)
		}
		if out, ok := ListenNotification(b, json.RawMessage(`1`), Filter{ToolsListChanged: true, ResourcesListChanged: true, PromptsListChanged: true}); ok {
			if m, err := rewrite.ParseMessage(out); err != nil || m.Kind != rewrite.KindNotification {
				t.Fatalf("ListenNotification made %s from %s", out, b)
			}
		}
	})
}

// TestListenKeysAreExact: the bridge reads a listen filter, and the legacy
// upstream's capabilities it honours it by, with member names matched as
// the schemas spell them, as the client that wrote the filter and a legacy
// client of the upstream read them (go-sdk decodes case-sensitively,
// JavaScript objects are keyed exactly): a member in another case asks for,
// or declares, nothing, and of a member written twice the last counts. The
// bridge must not acknowledge, and relay, kinds the client did not ask for.
func TestListenKeysAreExact(t *testing.T) {
	f, err := ParseListen(json.RawMessage(`{"notifications":{"ToolsListChanged":true,"PROMPTSLISTCHANGED":true,` +
		`"resourcesListchanged":true,"ResourceSubscriptions":["a://1"]}}`))
	if err != nil || !reflect.DeepEqual(f, Filter{}) {
		t.Errorf("filter of members in other cases = %+v, %v; want one asking nothing", f, err)
	}
	f, err = ParseListen(json.RawMessage(`{"notifications":{"toolsListChanged":true,"ToolsListChanged":false,` +
		`"resourceSubscriptions":["a://1"],"resourcesubscriptions":[]}}`))
	if want := (Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"a://1"}}); err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("filter with members repeated in another case = %+v, %v; want %+v", f, err, want)
	}
	if f, err := ParseListen(json.RawMessage(`{"Notifications":{"toolsListChanged":true}}`)); err != nil || !reflect.DeepEqual(f, Filter{}) {
		t.Errorf("filter under params.Notifications = %+v, %v; want one asking nothing", f, err)
	}
	all := Filter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: []string{"a://1"}}
	h := all.Honoured(json.RawMessage(`{"tools":{"ListChanged":true},"Prompts":{"listChanged":true},` +
		`"resources":{"listChanged":true,"ListChanged":false,"Subscribe":true}}`))
	if want := (Filter{ResourcesListChanged: true}); !reflect.DeepEqual(h, want) {
		t.Errorf("honoured by capabilities in other cases = %+v; want %+v", h, want)
	}
}

// FuzzListenKeys holds ParseListen and Honoured to a reading of the same
// bytes through maps, whose keys encoding/json matches exactly (last of
// duplicates winning), as the client and a legacy client of the upstream
// read them.
func FuzzListenKeys(f *testing.F) {
	f.Add([]byte(`{"notifications":{"toolsListChanged":true,"ToolsListChanged":false,"resourceSubscriptions":["a://1"]}}`),
		[]byte(`{"tools":{"listChanged":true},"resources":{"Subscribe":true,"subscribe":true}}`))
	f.Add([]byte(`{"notifications":null,"Notifications":{"promptsListChanged":true}}`), []byte(`{"prompts":{"listChanged":1}}`))
	f.Add([]byte(`{"notifications":{"promptsListChanged":null,"resourceSubscriptions":null}}`), []byte(`null`))
	f.Add([]byte(` null `), []byte(`{"resources":{"listChanged":true,"ListChanged":false}}`))
	f.Fuzz(func(t *testing.T, params, caps []byte) {
		got, err := ParseListen(params)
		want, ok := refListen(params)
		if ok != (err == nil) || ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseListen(%q) = %+v, %v; want %+v, ok %v", params, got, err, want, ok)
		}
		if !ok || !json.Valid(caps) {
			return
		}
		var c any
		_ = json.Unmarshal(caps, &c)
		declared := func(path ...string) bool {
			v := c
			for _, k := range path {
				m, _ := v.(map[string]any)
				v = m[k]
			}
			return v == true
		}
		want = Filter{ToolsListChanged: want.ToolsListChanged && declared("tools", "listChanged"),
			PromptsListChanged:   want.PromptsListChanged && declared("prompts", "listChanged"),
			ResourcesListChanged: want.ResourcesListChanged && declared("resources", "listChanged")}
		if declared("resources", "subscribe") {
			want.ResourceSubscriptions = got.ResourceSubscriptions
		}
		if h := got.Honoured(caps); !reflect.DeepEqual(h, want) {
			t.Fatalf("%+v.Honoured(%q) = %+v; want %+v", got, caps, h, want)
		}
	})
}

// refListen reads params as maps: false where ParseListen must fail (not
// JSON, neither an object nor null, a notifications that is not an object,
// a mistyped member); params without notifications ask for nothing.
func refListen(in []byte) (Filter, bool) {
	var v any
	if json.Unmarshal(in, &v) != nil {
		return Filter{}, false
	}
	if v == nil {
		return Filter{}, true
	}
	var p, n map[string]json.RawMessage
	if json.Unmarshal(in, &p) != nil {
		return Filter{}, false
	}
	raw, ok := p["notifications"]
	if !ok || string(raw) == "null" {
		return Filter{}, true
	}
	if json.Unmarshal(raw, &n) != nil {
		return Filter{}, false
	}
	var f Filter
	var agents bool // read, and refused when mistyped, as the sidecar's filter reads it
	for key, dst := range map[string]any{"toolsListChanged": &f.ToolsListChanged, "promptsListChanged": &f.PromptsListChanged,
		"resourcesListChanged": &f.ResourcesListChanged, "resourceSubscriptions": &f.ResourceSubscriptions, "agentsListChanged": &agents} {
		if raw, ok := n[key]; ok && json.Unmarshal(raw, dst) != nil {
			return Filter{}, false
		}
	}
	return f, true
}
