// Package bridge owns the sidecar's knowledge of which protocol eras the
// upstream speaks, and the translation that lets a client of one era talk
// to an upstream of the other (PROTOCOL.md §7).
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
// untouched, byte for byte.
//
// legacyfront.go is the other direction: while the upstream speaks only
// 2026-07-28, a LegacyFront (in front of the Transport) answers a legacy
// client's initialize from the upstream's server/discover (asked through
// onbehalf), mints the session, bound to the caller's credentials, and
// carries the session's requests on the modern wire; legacyshape.go holds
// its pure rewrites.
package bridge
