// Package onbehalf owns every request the sidecar makes to the upstream on
// a caller's behalf: the auth gate's probe, the upstream-files overlay's
// reads and agents/get's tools/list, and whatever else must ask the
// upstream what it would tell this caller. One builder makes them all
// valid requests of the caller's era (its _meta and MCP headers on the
// 2026-07-28 wire), with one list of the caller's headers they carry (its
// credentials, [DefaultCredentials] unless configured, its session, era and
// trace) and its network identity set as a forwarded request's is
// ([SetForwarded]); each gets a fresh id, and only a reply carrying that id
// answers it ([ReadReply]). The requests on a session the sidecar holds
// for its callers (the era bridge's: its initialize, a message on it, the
// GET that listens, the DELETE that ends it) are built by [Held], with the
// caller headers it was opened with ([CallerHeaders]). No other package
// builds a request made for a caller (onebuilder_test.go at the
// repository's root). The upstream's refusal of one comes back as a
// [*Refusal] error, which the proxy passes on to the caller with the
// caller's own id; no reply at all as [ErrUnreachable], unless the caller's
// own request ended first (its context's error).
//
// Caches of what the upstream told one caller are keyed by [CallerKey],
// a hash of its credentials and network identity: the package never logs
// or stores a credential. It writes nothing to a caller: replies are the
// proxy's.
package onbehalf
