// Package sessionid owns the session ids the era bridge's legacy front
// mints for legacy clients of a modern-only upstream: what a session fixes
// at initialize (the negotiated protocol version, the client's
// capabilities and clientInfo) and its absolute expiry, sealed with
// AES-256-GCM under a key every replica shares, bound to a hash of the
// caller's credentials (the additional data: the id opens only when the
// same hash is presented), and written as base64url, visible ASCII as the
// Streamable HTTP transport requires of Mcp-Session-Id. Any replica holding
// a key that sealed an id opens it; nothing about a session needs to be
// remembered to serve it.
//
// It also parses the keys file (one base64 key of KeySize bytes per line,
// the first sealing, all opening).
//
// The package is pure: bytes and values in, bytes and values out. It must
// not read a file, clock, network or logger (the caller passes the time),
// and its only source of randomness is the nonce crypto/rand gives Seal.
// It must not decide what a failed Open means on the wire: every failure is
// an unknown session to the caller.
package sessionid
