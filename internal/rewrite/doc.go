// Package rewrite owns the byte-exact transformations the proxy applies to
// the traffic it forwards: reading and re-framing server-sent events,
// reading JSON-RPC envelopes, editing JSON objects in place, and splicing
// the sidecar's extension declarations (SEP-2133) into initialize and
// server/discover results, and merging what the sidecar honours into a
// subscriptions/listen acknowledgement (listen.go).
//
// Its invariant is that bytes it does not need to change pass through
// untouched: an SSE event is handed on as the exact bytes read, a JSON edit
// replaces or inserts one member and copies every other byte (key order,
// whitespace, escapes, number spellings), and a raw JSON-RPC id is never
// re-encoded. JSON is walked by byte offsets after one validity check;
// nothing is unmarshalled into maps.
//
// It also defines the hand-off of a parsed message (Parsed, MessageOf): a
// request body the proxy parsed tells the transports below it the message,
// so that no one parses the same bytes twice.
//
// The package is pure: it takes bytes and returns bytes. It must not import
// the network, the clock, a logger or metrics, hold package-level mutable
// state, or decide policy (which method's reply to rewrite is the proxy's
// call). TestImportsArePure pins the import list.
package rewrite
