package notify

import (
	"encoding/json"
)

// Methods of the notifications the sidecar sends.
const (
	MethodResourcesListChanged = "notifications/resources/list_changed"
	MethodAgentsListChanged    = "notifications/agents/list_changed"
	// MethodPromptsListChanged and MethodToolsListChanged are sent for the
	// prompts and tools host compatibility adds.
	MethodPromptsListChanged = "notifications/prompts/list_changed"
	MethodToolsListChanged   = "notifications/tools/list_changed"
	MethodResourcesUpdated   = "notifications/resources/updated"
	MethodAcknowledged       = "notifications/subscriptions/acknowledged"
	// MetaSubscriptionID is the _meta key naming a modern stream's listen
	// request (2026-07-28 NotificationMetaObject).
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// frame encodes one notification as an SSE event: one data line, no id:
// (see the package comment) and no event: name (the default, "message",
// which every client reads). uri is params.uri of resources/updated, ""
// for none; subID is the raw listen id of a modern stream, nil for none.
func frame(method, uri string, subID json.RawMessage) []byte {
	b := append([]byte(`data: {"jsonrpc":"2.0","method":`), quote(method)...)
	if uri != "" || subID != nil {
		b = append(b, `,"params":{`...)
		sep := ""
		if subID != nil {
			b = append(b, `"_meta":{"`+MetaSubscriptionID+`":`...)
			b = append(b, subID...)
			b = append(b, '}')
			sep = ","
		}
		if uri != "" {
			b = append(b, sep+`"uri":`...)
			b = append(b, quote(uri)...)
		}
		b = append(b, '}')
	}
	return append(b, "}\n\n"...)
}

func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
