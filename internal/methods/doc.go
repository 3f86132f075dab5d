// Package methods owns the MCP methods the sidecar answers itself from the
// catalog snapshot: skills/list and skills/get (SEP-2640), agents/list and
// agents/get (agents draft), resources/read of the skill files the sidecar
// serves, resources/directory/read under skill roots, the legacy
// resources/subscribe and resources/unsubscribe of those files (recorded in
// Options.Subscriptions, so package notify can tell the session when one
// changes), and the sidecar's share of resources/list (appended after the
// upstream's own pages, without the URIs the upstream lists itself, with
// the sizes skills/list states: stated.go). With Options.HostCompat it also
// offers the skills to hosts without the extension (hostcompat.go): prompts
// and tools of its own, appended to the upstream's prompts/list and
// tools/list as its resources are, and prompts/get and tools/call of
// exactly those names (every other one is the upstream's, untouched).
//
// Which catalog files the upstream serves itself, and what it serves for
// them, is package upstreamfiles' (Options.Overlay): this package asks it
// for verdicts and applies them to its own entries (servedentries.go,
// stated.go) and sees the handshakes that may start a prefetch
// (prefetch.go).
//
// It also owns the per-request era checks of the 2026-07-28 wire for those
// methods (docs/protocol.md §1). It never forwards anything itself and writes
// nothing: an answer is a reply.Reply the proxy writes, a request it does not
// own is left to the proxy, and a reply it must extend is edited
// through the function EditReply returns. Entries are encoded once per
// snapshot and reused, so a listing costs a copy, not a re-encode.
package methods
