package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The 2026-07-28 subscriptions/listen exchange (basic/patterns/
// subscriptions): the request's params.notifications is a
// SubscriptionFilter; the server's first message on the stream is
// notifications/subscriptions/acknowledged whose params.notifications is
// the subset it honours; every notification on the stream, and the result
// that ends it gracefully, carry _meta[MetaSubscriptionID] = the request id.

// Names of the listen exchange.
const (
	MethodListen       = "subscriptions/listen"
	MethodAcknowledged = "notifications/subscriptions/acknowledged"
	// MetaSubscriptionID is the _meta key naming a stream's listen request.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// ErrNotAcknowledgement reports a message MergeAcknowledgement cannot
// edit: not a notifications/subscriptions/acknowledged notification.
var ErrNotAcknowledgement = errors.New("rewrite: not a subscriptions acknowledgement")

// ListenFilter is the part of a SubscriptionFilter the sidecar can honour
// itself: list changes of the resources it adds (the catalog's skill URIs),
// of the agents (the agents extension's agentsListChanged key), and
// resources/updated of given URIs, and, when host compatibility adds
// prompts or tools, their list changes (promptsListChanged,
// toolsListChanged). Other keys (other extensions') are the upstream's
// alone.
type ListenFilter struct {
	ResourcesListChanged  bool
	AgentsListChanged     bool
	PromptsListChanged    bool
	ToolsListChanged      bool
	ResourceSubscriptions []string
}

// Any reports whether f asks for anything.
func (f ListenFilter) Any() bool {
	return f.ResourcesListChanged || f.AgentsListChanged || f.PromptsListChanged || f.ToolsListChanged || len(f.ResourceSubscriptions) > 0
}

// flags are f's boolean members by their wire names, in the order they are
// written.
func (f ListenFilter) flags() []struct {
	key string
	on  bool
} {
	return []struct {
		key string
		on  bool
	}{{"resourcesListChanged", f.ResourcesListChanged}, {"agentsListChanged", f.AgentsListChanged},
		{"promptsListChanged", f.PromptsListChanged}, {"toolsListChanged", f.ToolsListChanged}}
}

// ParseListenFilter reads params.notifications of a subscriptions/listen
// request. A missing or mistyped filter is an error (the upstream answers
// such a request with its own error; the sidecar then honours nothing).
// Member names are matched exactly, as the upstream reads them (go-sdk
// decodes case-sensitively, as a JavaScript object is keyed), not folded
// as encoding/json matches a struct's fields; of a member written twice
// the last counts.
func ParseListenFilter(params []byte) (ListenFilter, error) {
	if !valid(params) {
		return ListenFilter{}, fmt.Errorf("listen filter: %w", ErrParse)
	}
	n, ok := GetKey(params, []string{"notifications"})
	if !ok || string(n) == "null" {
		return ListenFilter{}, fmt.Errorf("listen filter: no params.notifications: %w", ErrInvalidRequest)
	}
	if n[0] != '{' {
		return ListenFilter{}, fmt.Errorf("listen filter: params.notifications: %w", ErrNotObject)
	}
	var f ListenFilter
	members := []struct {
		key string
		dst any
	}{{"resourcesListChanged", &f.ResourcesListChanged}, {"agentsListChanged", &f.AgentsListChanged},
		{"promptsListChanged", &f.PromptsListChanged}, {"toolsListChanged", &f.ToolsListChanged},
		{"resourceSubscriptions", &f.ResourceSubscriptions}}
	for _, m := range members {
		if v, ok := GetKey(n, []string{m.key}); ok {
			if err := json.Unmarshal(v, m.dst); err != nil {
				return ListenFilter{}, fmt.Errorf("listen filter: %s: %w", m.key, err)
			}
		}
	}
	return f, nil
}

// MergeAcknowledgement returns the acknowledgement msg with what add names
// honoured as well: resourcesListChanged and agentsListChanged set to true
// where add asks for them, and add's URIs appended to resourceSubscriptions
// (each once; ones already there are not repeated). Every other byte of msg
// is kept. A null params, params.notifications or resourceSubscriptions is
// read as absent, as go-sdk reads it, and replaced when something goes
// under it. upstream reports whether msg already honoured anything (a member
// of params.notifications that is not false, null or empty), which tells a
// stream the upstream will end at once from one it keeps open.
func MergeAcknowledgement(msg []byte, add ListenFilter) (out []byte, upstream bool, err error) {
	if !valid(msg) {
		return nil, false, fmt.Errorf("merge acknowledgement: %w", ErrParse)
	}
	if m, _ := GetString(msg, "method"); m != MethodAcknowledged {
		return nil, false, ErrNotAcknowledgement
	}
	if _, has := GetKey(msg, []string{"id"}); has {
		return nil, false, ErrNotAcknowledgement
	}
	path := []string{"params", "notifications"}
	notif, has := GetKey(msg, path)
	if has && string(notif) != "null" {
		if len(notif) == 0 || notif[0] != '{' {
			return nil, false, fmt.Errorf("merge acknowledgement: params.notifications: %w", ErrNotObject)
		}
		it := newObjIter(notif, 0)
		for m, more := it.next(); more; m, more = it.next() {
			if honours(notif[m.valStart:m.valEnd]) {
				upstream = true
			}
		}
	}
	out = msg
	if add.Any() {
		// null where the schema has an object is read as absent (go-sdk
		// decodes it to the zero value): one is made in its place.
		for _, p := range [][]string{path[:1], path} {
			if v, ok := GetKey(out, p); ok && string(v) == "null" {
				if out, err = SetKey(out, p, json.RawMessage("{}")); err != nil {
					return nil, false, err
				}
			}
		}
	}
	set := func(key string) error {
		if v, ok := GetKey(out, append(path, key)); ok && string(v) == "true" {
			return nil
		}
		out, err = SetKey(out, append(path, key), json.RawMessage("true"))
		return err
	}
	for _, fl := range add.flags() {
		if !fl.on {
			continue
		}
		if err := set(fl.key); err != nil {
			return nil, false, err
		}
	}
	if len(add.ResourceSubscriptions) > 0 {
		upath := append(path, "resourceSubscriptions")
		var have []json.RawMessage
		if raw, ok := GetKey(out, upath); ok && string(raw) == "null" {
			if out, err = SetKey(out, upath, json.RawMessage("[]")); err != nil { // null: no URIs
				return nil, false, err
			}
		} else if ok {
			if json.Unmarshal(raw, &have) != nil {
				return nil, false, fmt.Errorf("merge acknowledgement: resourceSubscriptions: %w", ErrNotArray)
			}
		}
		seen := make(map[string]bool, len(have)+len(add.ResourceSubscriptions))
		for _, h := range have {
			var s string
			if json.Unmarshal(h, &s) == nil {
				seen[s] = true
			}
		}
		var elems []json.RawMessage
		for _, u := range add.ResourceSubscriptions {
			if !seen[u] {
				seen[u] = true
				elems = append(elems, AppendString(nil, u))
			}
		}
		if out, err = AppendToArray(out, upath, elems...); err != nil {
			return nil, false, err
		}
	}
	return out, upstream, nil
}

// honours reports whether a filter member's value asks for something.
func honours(v []byte) bool {
	v = bytes.TrimSpace(v)
	switch {
	case string(v) == "false", string(v) == "null":
		return false
	case len(v) >= 2 && (v[0] == '[' || v[0] == '{'):
		return len(bytes.TrimSpace(v[1:len(v)-1])) > 0
	}
	return true
}

// Acknowledgement composes the acknowledgement of a listen stream the
// sidecar serves alone: subscription id (the request's raw id) in _meta,
// and f as the honoured filter.
func Acknowledgement(id json.RawMessage, f ListenFilter) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","method":"`+MethodAcknowledged+`","params":{"_meta":{"`+MetaSubscriptionID+`":`), id...)
	b = append(b, `},"notifications":{`...)
	sep := ""
	for _, fl := range f.flags() {
		if fl.on {
			b = append(b, sep+`"`+fl.key+`":true`...)
			sep = ","
		}
	}
	if len(f.ResourceSubscriptions) > 0 {
		b = append(b, sep+`"resourceSubscriptions":[`...)
		for i, u := range f.ResourceSubscriptions {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, u)
		}
		b = append(b, ']')
	}
	return append(b, "}}}"...)
}

// ListenResult composes the result that ends a listen stream gracefully:
// _meta carries the subscription id, equal to the request id.
func ListenResult(id json.RawMessage) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"result":{"_meta":{"`+MetaSubscriptionID+`":`...)
	b = append(b, id...)
	return append(b, `},"resultType":"complete"}}`...)
}

// IsMethodNotFound reports whether msg is the error reply -32601 (Method
// not found) to the request with id.
func IsMethodNotFound(msg []byte, id json.RawMessage) bool {
	m, err := ParseMessage(msg)
	if err != nil || m.Kind != KindError || !bytes.Equal(m.ID, id) {
		return false
	}
	code, ok := GetKey(m.Error, []string{"code"})
	return ok && string(code) == "-32601"
}
