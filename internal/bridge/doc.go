// Package bridge owns the sidecar's knowledge of which protocol eras the
// upstream speaks, and the translation that lets a client of one era talk
// to an upstream of the other (docs/protocol.md §6).
//
// era.go reads the upstream's replies to the two era probes (a modern
// server/discover, then, as the 2026-07-28 client rule says, a legacy
// initialize when the first reply is not a recognised modern one) into an
// Eras value; detect.go sends those probes at start and again on a fixed
// interval, so an upstream that restarts as another server is re-learned.
//
// translate.go holds the pure rewrites between the eras' message shapes,
// table-tested against the 2026-07-28 schema's shapes. transport.go and
// sessions.go are the edge: an http.RoundTripper that, when the upstream
// speaks only the legacy era and a request is of the modern one, holds a
// legacy session per authorization context and client-capability set and
// carries the request on it. Every other request passes through it
// untouched, byte for byte; what it translates is spliced (rewrite.SetKey,
// rewrite.DeleteKey), never re-encoded, so every byte the translation does
// not need to change arrives as sent, both ways.
//
// mrtr.go carries a legacy server's requests to the client inside a call
// (the 2026-07-28 multi round-trip requests): sampling/createMessage,
// elicitation/create and roots/list inside tools/call, prompts/get or
// resources/read become an input_required result (inputRequests keyed by
// the server's request id, a random requestState), the legacy call waits
// on its session (DefaultMaxPending calls, DefaultPendingTimeout each)
// until the same caller (credentials and capabilities) retries the same
// call with inputResponses. A capability the client did not declare is
// -32021 with requiredCapabilities; inside another method -32603
// server_request_not_bridged; ping is answered {} upstream, any other
// server request -32601, and the call goes on.
//
// Every table the bridge keeps (held sessions, listens, pending calls, the
// front's sessions, streams and subscriptions) gives one caller at most
// its share (package caller). Nothing of a held session reaches a modern
// caller (seal: its Mcp-Session-Id, Access-Control-* and event ids). The
// bridge writes no reply of its own: its answers (server/discover from
// the held session, input_required, the front's initialize and pings, a
// stream it serves) are package reply's Answer values and its refusals
// and failures errors carrying a *reply.Error (failure.go), all returned
// as RoundTrip's error, which the proxy writes with the caller's id (and
// logs); the events of a stream already under way are encoded by package
// reply. route.go keeps the bridge off the path of an upstream that
// speaks both eras.
//
// legacyfront.go is the other direction: while the upstream speaks only
// 2026-07-28, a LegacyFront (in front of the Transport) answers a legacy
// client's initialize from the upstream's server/discover (asked through
// onbehalf), mints the session (what initialize fixed, sealed into the id
// by package sessionid and bound to the caller's credentials, so any
// replica with the key serves it) and carries the session's requests on
// the modern wire; legacyshape.go holds its pure rewrites.
package bridge
