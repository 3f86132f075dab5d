package onbehalf

import (
	"crypto/sha256"
	"net/http"
	"slices"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// DefaultCredentials are the headers that carry a caller's credentials
// unless configured otherwise (config's auth-headers default, which a test
// keeps equal to it).
func DefaultCredentials() []string { return []string{"Authorization", "Cookie"} }

// Credentials returns the credential headers in force: names, or
// DefaultCredentials when names is empty (one shared list, only to be
// read; its capacity is its length, so an append copies).
func Credentials(names []string) []string {
	if len(names) == 0 {
		return defaultCredentials
	}
	return names
}

var defaultCredentials = slices.Clip(DefaultCredentials())

// CopyHeaders copies the named headers of src, those that are present, to
// dst: how a request made on a caller's behalf carries the caller's
// credentials (and whatever else names lists) to the upstream.
func CopyHeaders(dst, src http.Header, names []string) {
	for _, k := range names {
		if v := src.Values(k); len(v) > 0 {
			dst[http.CanonicalHeaderKey(k)] = v
		}
	}
}

// CredentialKey hashes the values of the named headers of h: the cache key
// of an authorization context. Credentials themselves are never stored.
// The hash is package caller's HeaderSum.
func CredentialKey(h http.Header, names ...string) [sha256.Size]byte {
	sum, _ := caller.HeaderSum(h, names)
	return sum
}

// identityHeaders are the headers of SetForwarded: a caller's network
// identity.
var identityHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// callerHeaders are the headers, besides its credentials, that say whom a
// request already bound for the upstream is made for: the caller's trace,
// its user agent and its network identity as SetForwarded set it.
var callerHeaders = slices.Concat([]string{traceParent, traceState, "User-Agent"}, identityHeaders)

// CallerHeaders returns the headers of out, a request on its way to the
// upstream for a caller (forwarded, so its network identity is already
// set), that a further request for the same caller carries: the named
// credential headers (DefaultCredentials when names is empty), its trace,
// user agent and X-Forwarded-* identity. The era bridge sends them with
// what opens, uses and ends a session it holds for that caller, so an
// upstream sees those requests as the caller's, as it sees the gate's
// probe and the sidecar's reads.
func CallerHeaders(out http.Header, names []string) http.Header {
	names = Credentials(names)
	h := make(http.Header, len(names)+len(callerHeaders))
	CopyHeaders(h, out, names)
	CopyHeaders(h, out, callerHeaders)
	return h
}

// SessionKey is the key of a session held for the caller of out (see
// CallerHeaders): a hash of its credentials (the named headers,
// DefaultCredentials when names is empty) and its network identity, then
// of extra (what else the session depends on), so two authorization
// contexts, or two client addresses, never share one.
func SessionKey(out http.Header, names []string, extra []byte) [sha256.Size]byte {
	k, _ := caller.HeaderSum(out, Credentials(names), identityHeaders)
	return sha256.Sum256(append(k[:], extra...))
}

// CallerKey is the cache key of what the upstream told the caller of r: a
// hash of the named headers (its credentials, and whatever else the cache
// depends on) and of the network identity a request on its behalf carries
// (see SetForwarded). An upstream may authorise by client address, so one
// address's admission must not admit another.
func CallerKey(r *http.Request, names ...string) [sha256.Size]byte {
	h := make(http.Header, len(names)+len(identityHeaders))
	CopyHeaders(h, r.Header, names)
	SetForwarded(h, r)
	k, _ := caller.HeaderSum(h, names, identityHeaders)
	return k
}
