package rewrite

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

// The shapes below are the 2026-07-28 schema's: a SubscriptionFilter with
// its optional keys, the acknowledgement notification carrying it under
// params.notifications and the subscription id under params._meta.
func TestMergeAcknowledgement(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/subscriptionId":7}`
	tests := []struct {
		name     string
		in       string
		add      ListenFilter
		want     string
		upstream bool
		err      error
	}{
		{
			name: "empty upstream filter gains the sidecar's keys",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{` + meta + `,"notifications":{}}}`,
			add:  ListenFilter{ResourcesListChanged: true, AgentsListChanged: true},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{` + meta + `,"notifications":{"resourcesListChanged":true,"agentsListChanged":true}}}`,
		},
		{
			name:     "upstream's keys kept byte for byte; the new member copies the last one's spacing (SetKey)",
			in:       `{"jsonrpc":"2.0", "method":"notifications/subscriptions/acknowledged", "params":{` + meta + `, "notifications":{ "toolsListChanged": true }}}`,
			add:      ListenFilter{ResourcesListChanged: true},
			want:     `{"jsonrpc":"2.0", "method":"notifications/subscriptions/acknowledged", "params":{` + meta + `, "notifications":{ "toolsListChanged": true, "resourcesListChanged": true }}}`,
			upstream: true,
		},
		{
			name: "host compatibility's prompts and tools",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"promptsListChanged":false}}}`,
			add:  ListenFilter{PromptsListChanged: true, ToolsListChanged: true},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"promptsListChanged":true,"toolsListChanged":true}}}`,
		},
		{
			name:     "already true: unchanged",
			in:       `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourcesListChanged":true}}}`,
			add:      ListenFilter{ResourcesListChanged: true},
			want:     `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourcesListChanged":true}}}`,
			upstream: true,
		},
		{
			name: "false replaced in place",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"agentsListChanged":false,"promptsListChanged":false}}}`,
			add:  ListenFilter{AgentsListChanged: true},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"agentsListChanged":true,"promptsListChanged":false}}}`,
		},
		{
			name:     "resourceSubscriptions appended once each",
			in:       `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a", "skill://x/SKILL.md"]}}}`,
			add:      ListenFilter{ResourceSubscriptions: []string{"skill://x/SKILL.md", "skill://y/ref.md", "skill://y/ref.md"}},
			want:     `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a", "skill://x/SKILL.md", "skill://y/ref.md"]}}}`,
			upstream: true,
		},
		{
			name: "resourceSubscriptions created, empty array counts as none",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":[]}}}`,
			add:  ListenFilter{ResourceSubscriptions: []string{"skill://x/SKILL.md"}},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["skill://x/SKILL.md"]}}}`,
		},
		{
			name: "no notifications member: created",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{` + meta + `}}`,
			add:  ListenFilter{AgentsListChanged: true},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{` + meta + `,"notifications":{"agentsListChanged":true}}}`,
		},
		{
			name: "nothing to add: unchanged",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`,
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`,
		},
		// null where the schema has an object or an array is read as
		// absent by go-sdk (the zero value) and by a JavaScript client's
		// optional members (?? []): the acknowledgement is one, merged as if
		// the member were missing, never refused (the proxy would take it
		// for an early notification and hold it).
		{
			name: "resourceSubscriptions null: an array made in its place",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":null}}}`,
			add:  ListenFilter{ResourceSubscriptions: []string{"skill://x/SKILL.md"}},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["skill://x/SKILL.md"]}}}`,
		},
		{
			name: "notifications null: an object made in its place",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{` + meta + `,"notifications":null}}`,
			add:  ListenFilter{AgentsListChanged: true},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{` + meta + `,"notifications":{"agentsListChanged":true}}}`,
		},
		{
			name: "notifications null, nothing to add: unchanged",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":null}}`,
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":null}}`,
		},
		{
			name: "params null: an object made in its place",
			in:   `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":null}`,
			add:  ListenFilter{ResourcesListChanged: true},
			want: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourcesListChanged":true}}}`,
		},
		{name: "another notification", in: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, add: ListenFilter{AgentsListChanged: true}, err: ErrNotAcknowledgement},
		{name: "a request of that name", in: `{"jsonrpc":"2.0","id":1,"method":"notifications/subscriptions/acknowledged","params":{}}`, err: ErrNotAcknowledgement},
		{name: "not JSON", in: `{"jsonrpc":`, err: ErrParse},
		{name: "notifications not an object", in: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":[]}}`, add: ListenFilter{AgentsListChanged: true}, err: ErrNotObject},
		{name: "resourceSubscriptions not an array", in: `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":"x"}}}`, add: ListenFilter{ResourceSubscriptions: []string{"skill://a"}}, upstream: true, err: ErrNotArray},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, upstream, err := MergeAcknowledgement([]byte(tt.in), tt.add)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("got  %s\nwant %s", out, tt.want)
			}
			if upstream != tt.upstream {
				t.Errorf("upstream honours = %v, want %v", upstream, tt.upstream)
			}
		})
	}
}

func TestParseListenFilter(t *testing.T) {
	f, err := ParseListenFilter([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":{"toolsListChanged":true,"resourcesListChanged":true,"agentsListChanged":false,"resourceSubscriptions":["skill://a/SKILL.md"]}}`))
	if err != nil || !f.ResourcesListChanged || f.AgentsListChanged || len(f.ResourceSubscriptions) != 1 || f.ResourceSubscriptions[0] != "skill://a/SKILL.md" {
		t.Errorf("ParseListenFilter = %+v, %v", f, err)
	}
	for _, bad := range []string{`{}`, `{"notifications":null}`, `{"notifications":{"agentsListChanged":"yes"}}`, `[]`, `x`} {
		if _, err := ParseListenFilter([]byte(bad)); err == nil {
			t.Errorf("ParseListenFilter(%s) accepted", bad)
		}
	}
}

// TestParseListenFilterKeysAreExact: a filter's member names are matched as
// the schema spells them, code unit by code unit (RFC 8259 §8.3), as the
// upstream behind the sidecar reads the same params (go-sdk decodes
// case-sensitively, JavaScript objects are case-sensitive): a member
// spelled in another case asks for nothing, and of a member written twice
// the last exact spelling counts. The sidecar must not honour, and push,
// what the upstream reads as not asked for.
func TestParseListenFilterKeysAreExact(t *testing.T) {
	f, err := ParseListenFilter([]byte(`{"notifications":{"ResourcesListChanged":true,"AGENTSLISTCHANGED":true,` +
		`"promptsListchanged":true,"ToolsListChanged":true,"ResourceSubscriptions":["skill://a/SKILL.md"]}}`))
	if err != nil || f.Any() {
		t.Errorf("filter of members in other cases = %+v, %v; want one asking nothing", f, err)
	}
	f, err = ParseListenFilter([]byte(`{"notifications":{"resourcesListChanged":true,"ResourcesListChanged":false,` +
		`"resourceSubscriptions":["skill://a/SKILL.md"],"resourcesubscriptions":[]}}`))
	if err != nil || !f.ResourcesListChanged || len(f.ResourceSubscriptions) != 1 {
		t.Errorf("filter with members repeated in another case = %+v, %v; want the exact spellings'", f, err)
	}
	f, err = ParseListenFilter([]byte(`{"notifications":{"agentsListChanged":false,"agents\u004cistChanged":true}}`))
	if err != nil || !f.AgentsListChanged {
		t.Errorf("filter with an escaped member name = %+v, %v; want it read as its unescaped name", f, err)
	}
	if f, err := ParseListenFilter([]byte(`{"Notifications":{"resourcesListChanged":true}}`)); err == nil {
		t.Errorf("filter under params.Notifications = %+v accepted; want no params.notifications", f)
	}
}

// FuzzParseListenFilter holds ParseListenFilter to a reading of the same
// params through maps, whose keys encoding/json matches exactly (last of
// duplicates winning), as the upstream reads them.
func FuzzParseListenFilter(f *testing.F) {
	f.Add([]byte(`{"notifications":{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["skill://a/SKILL.md"]}}`))
	f.Add([]byte(`{"notifications":{"ResourcesListChanged":true,"resourcesListChanged":false,"agents\u004cistChanged":true}}`))
	f.Add([]byte(`{"notifications":{"resourceSubscriptions":null,"promptsListChanged":null},"notifications":{"toolsListChanged":1}}`))
	f.Add([]byte(`{"Notifications":{},"notifications":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseListenFilter(in)
		want, ok := refListenFilter(in)
		if ok != (err == nil) || ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseListenFilter(%q) = %+v, %v; want %+v, ok %v", in, got, err, want, ok)
		}
	})
}

// refListenFilter reads params as maps: false where ParseListenFilter must
// fail (not JSON, no params.notifications object, a mistyped member).
func refListenFilter(in []byte) (ListenFilter, bool) {
	var p, n map[string]json.RawMessage
	if json.Unmarshal(in, &p) != nil {
		return ListenFilter{}, false
	}
	if raw, ok := p["notifications"]; !ok || json.Unmarshal(raw, &n) != nil || n == nil {
		return ListenFilter{}, false
	}
	var f ListenFilter
	for key, dst := range map[string]any{"resourcesListChanged": &f.ResourcesListChanged, "agentsListChanged": &f.AgentsListChanged,
		"promptsListChanged": &f.PromptsListChanged, "toolsListChanged": &f.ToolsListChanged, "resourceSubscriptions": &f.ResourceSubscriptions} {
		if raw, ok := n[key]; ok && json.Unmarshal(raw, dst) != nil {
			return ListenFilter{}, false
		}
	}
	return f, true
}

// The sidecar's own acknowledgement and closing result, checked against
// the schema's shapes by decoding them as a peer would.
func TestAcknowledgementAndResult(t *testing.T) {
	id := json.RawMessage(`"l-1"`)
	var ack struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  struct {
			Meta          map[string]json.RawMessage `json:"_meta"`
			Notifications map[string]json.RawMessage `json:"notifications"`
		} `json:"params"`
	}
	b := Acknowledgement(id, ListenFilter{ResourcesListChanged: true, ResourceSubscriptions: []string{"skill://a/\"q\".md"}})
	if err := json.Unmarshal(b, &ack); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if ack.JSONRPC != "2.0" || ack.Method != "notifications/subscriptions/acknowledged" || string(ack.Params.Meta[MetaSubscriptionID]) != `"l-1"` ||
		string(ack.Params.Notifications["resourcesListChanged"]) != "true" || ack.Params.Notifications["agentsListChanged"] != nil ||
		string(ack.Params.Notifications["resourceSubscriptions"]) != `["skill://a/\"q\".md"]` {
		t.Errorf("acknowledgement %s", b)
	}
	var res struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	r := ListenResult(id)
	if err := json.Unmarshal(r, &res); err != nil || string(res.ID) != `"l-1"` || string(res.Result.Meta[MetaSubscriptionID]) != `"l-1"` {
		t.Errorf("result %s: %v", r, err)
	}
	if !IsMethodNotFound([]byte(`{"jsonrpc":"2.0","id":"l-1","error":{"code":-32601,"message":"no"}}`), id) ||
		IsMethodNotFound([]byte(`{"jsonrpc":"2.0","id":"l-2","error":{"code":-32601,"message":"no"}}`), id) ||
		IsMethodNotFound([]byte(`{"jsonrpc":"2.0","id":"l-1","error":{"code":-32602,"message":"no"}}`), id) {
		t.Error("IsMethodNotFound misjudges")
	}
}

// FuzzMergeAcknowledgement: whatever the upstream sends, the merge never
// panics, returns valid JSON, keeps the message's other members, and what
// it adds reads back.
func FuzzMergeAcknowledgement(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`), true, true, "skill://a/SKILL.md")
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["x"]}}}`), false, true, "x")
	f.Add([]byte(`{"method":"notifications/subscriptions/acknowledged"}`), true, false, "")
	f.Add([]byte(`{"method":"notifications/subscriptions/acknowledged","Method":"x"}`), true, false, "")
	f.Add([]byte(`{"method":"notifications/subscriptions/acknowledged","Params":{"Notifications":{"ResourcesListChanged":false}}}`), true, true, "u")
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":null}}}`), false, false, "skill://a/SKILL.md")
	f.Add([]byte(`{"method":"notifications/subscriptions/acknowledged","params":null,"params":{"notifications":null}}`), true, false, "u")
	f.Fuzz(func(t *testing.T, in []byte, res, agents bool, uri string) {
		if !utf8.ValidString(uri) {
			// A catalog URI is valid UTF-8 (the catalog refuses other
			// names), so the sidecar never honours one that is not; JSON
			// would carry it as U+FFFD, a different string.
			return
		}
		add := ListenFilter{ResourcesListChanged: res, AgentsListChanged: agents}
		if uri != "" {
			add.ResourceSubscriptions = []string{uri}
		}
		out, _, err := MergeAcknowledgement(in, add)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %q", in, out)
		}
		// Maps, not structs: member names are matched exactly, as the
		// protocol spells them and MergeAcknowledgement reads them (a
		// struct would also take "Method" or "Params"); of duplicate keys
		// the last counts, in both.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("merge of %q is not a JSON object: %q", in, out)
		}
		var method string
		if json.Unmarshal(m["method"], &method) != nil || method != MethodAcknowledged {
			t.Fatalf("merge of %q lost the method: %q", in, out)
		}
		if !res && !agents && uri == "" {
			return
		}
		var params, notif map[string]json.RawMessage
		if json.Unmarshal(m["params"], &params) != nil || json.Unmarshal(params["notifications"], &notif) != nil || notif == nil {
			t.Fatalf("merge of %q has no params.notifications object: %q", in, out)
		}
		for key, want := range map[string]bool{"resourcesListChanged": res, "agentsListChanged": agents} {
			var on bool
			if want && (json.Unmarshal(notif[key], &on) != nil || !on) {
				t.Fatalf("merge of %q lost %s: %q", in, key, out)
			}
		}
		if uri != "" {
			var subs []json.RawMessage
			found := false
			if json.Unmarshal(notif["resourceSubscriptions"], &subs) == nil {
				for _, s := range subs {
					var u string
					if json.Unmarshal(s, &u) == nil && u == uri {
						found = true
					}
				}
			}
			if !found {
				t.Fatalf("merge of %q lacks %q: %q", in, uri, out)
			}
		}
	})
}
