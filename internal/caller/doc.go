// Package caller owns the one definition of "a caller" and of "a share"
// for every bounded table callers share (held legacy sessions, calls
// waiting for a client's input, listen streams, subscriptions, processes,
// minted sessions): who a request's caller is ([Resolver.Of]), how much of
// a table one caller may hold ([Share]), and the refusal it gets past that
// ([Refusal]: 429 with Retry-After over its own share, 503 when the whole
// table is full, both with data.reason, both counted by table).
//
// A caller is the credentials the auth gate verifies against the upstream
// (the first of the configured credential headers the request carries,
// when the gate is on: the one the upstream verifies, listed first, not
// the others it ignores); without verified credentials (gate off, anonymous,
// a stdio upstream) it is the client's address: the TCP peer's, or, only
// when the peer is a configured trusted proxy, the address that proxy
// names in X-Forwarded-For or Forwarded (read right to left, past every
// trusted hop). An IPv6 address counts by its /64, which one host is
// routinely given whole. So a client cannot become many callers by
// changing a header, nor lock the others out by filling a table.
//
// The package holds no global state and does no I/O: a Resolver is a
// value built from the config, a Table counts places under its own lock,
// and the metrics are injected. It must not write a reply: a Refusal is an
// error value whose Reply the proxy (or a transport's one writer) sends.
package caller
