package caller

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
	"github.com/skills-sidecar/skills-sidecar/internal/slotctx"
)

// ID names one caller. IDs are comparable and serve as map keys; they hold
// hashes, never a credential or an address in the clear.
type ID struct {
	byAddress bool
	sum       [sha256.Size]byte
}

// ByAddress reports whether the caller is known by its address (no
// verified credentials) rather than by its credentials.
func (id ID) ByAddress() bool { return id.byAddress }

// Resolver says who the caller of a request is. The zero Resolver knows
// every caller by the TCP peer's address.
type Resolver struct {
	// Credentials are the headers whose values the auth gate verifies
	// against the upstream (config auth-headers, when auth-gate is
	// upstream); the first of them a request carries, in this order, names
	// its caller. Nil or empty: no credentials are believed, every caller
	// is its address.
	Credentials []string
	// TrustedProxies are the peers whose X-Forwarded-For or Forwarded
	// header names the client (config trusted-proxies); empty: no peer is
	// believed, the TCP peer is the client.
	TrustedProxies []netip.Prefix
}

// inboundKey is the context key of the client's own request.
type inboundKey struct{}

// WithRequest returns ctx carrying r, the request as the client sent it,
// so that Of, given any request made under ctx (the proxy's request to the
// upstream, a transport's own), judges the client's request: its
// credentials, its TCP peer, its forwarded headers before the proxy
// appended to them. The proxy binds its requests with Bind instead.
func WithRequest(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, inboundKey{}, r)
}

// Bound is a context carrying the client's request as WithRequest's does,
// for a caller that keeps it with the request (the proxy's per-request
// state) instead of allocating one. Its zero value is unusable: see Bind.
type Bound struct {
	context.Context
	r *http.Request
}

// Bind makes b ctx carrying r, as WithRequest(ctx, r) would, and returns
// it. b must not be bound again while anything made under it is in use.
func Bind(b *Bound, ctx context.Context, r *http.Request) context.Context {
	b.Context, b.r = ctx, r
	return b
}

// AfterFunc registers f on the context b was bound to as
// context.AfterFunc(ctx, f) does, directly when that context has an
// AfterFunc method of its own: so b passes the method on, and what is
// made under b registers on it as it would on the bound context.
func (b *Bound) AfterFunc(f func()) func() bool {
	if a, ok := b.Context.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(b.Context, f)
}

// AfterFuncSlot passes the method on to the context b was bound to, as
// AfterFunc does: it registers f there and returns the slot StopSlot
// takes to unregister it, so that a caller that keeps a stop function of
// its own registers without allocating. ok is false, and nothing
// registered, when that context has no such method.
func (b *Bound) AfterFuncSlot(f func()) (slot int, ok bool) {
	if a, ok := b.Context.(slotctx.SlotAfterFuncer); ok {
		return a.AfterFuncSlot(f)
	}
	return 0, false
}

// StopSlot unregisters what AfterFuncSlot registered in slot, reporting
// whether it did so before the function was started; only for a slot
// AfterFuncSlot gave with ok.
func (b *Bound) StopSlot(slot int) bool {
	a, ok := b.Context.(slotctx.SlotAfterFuncer)
	return ok && a.StopSlot(slot)
}

// Value answers inboundKey with the bound request and everything else as
// the context it was bound to.
func (b *Bound) Value(key any) any {
	if _, ok := key.(inboundKey); ok {
		return b.r
	}
	return b.Context.Value(key)
}

// Of returns the caller of r: of the client's request WithRequest bound
// to r's context when there is one, of r itself otherwise. A nil
// Resolver is the zero Resolver.
func (res *Resolver) Of(r *http.Request) ID {
	if in, ok := r.Context().Value(inboundKey{}).(*http.Request); ok && in != nil {
		r = in
	}
	if res == nil {
		res = &Resolver{}
	}
	if id, ok := res.credentials(r.Header); ok {
		return id
	}
	return ID{byAddress: true, sum: sha256.Sum256([]byte(res.client(r.RemoteAddr, r.Header)))}
}

// credentials hashes the first of the credential headers, in the order
// listed, that h carries; false when h carries none (or none are
// believed). One header, not all of them: an upstream that verifies one
// (a bearer token) ignores the others (a cookie), so a caller that holds
// a valid token would become a new caller, with a share of its own, each
// time it invented another value of a header nobody checks. For the same
// reason it is the header's first value, the one an upstream reads
// (Header.Get; Node keeps the first Authorization too), not a second
// line invented beside it; and an Authorization value is read as RFC
// 9110 (11.4) writes it, so a scheme in another case, or more spaces
// before the token, is the same credential.
func (res *Resolver) credentials(h http.Header) (ID, bool) {
	for _, name := range res.Credentials {
		ck := http.CanonicalHeaderKey(name)
		if vv := h[ck]; len(vv) > 0 {
			return ID{sum: credentialSum(ck, vv[0])}, true
		}
	}
	return ID{}, false
}

// credentialSum is the hash of one credential: HeaderSum's layout (the
// canonical name, a NUL, the value and a NUL) of the value as its
// upstream reads it. An Authorization value is its scheme, in ASCII lower
// case (RFC 9110, 11.1: case-insensitive), one space, and the rest after
// the spaces and tabs that follow the scheme (11.4: 1*SP), without the
// trailing ones; the rest (a token68, case-sensitive) as it is. It
// allocates only for a value of more than headerSumRoom bytes.
func credentialSum(ck, v string) [sha256.Size]byte {
	var room [headerSumRoom]byte
	b := append(append(room[:0], ck...), 0)
	if ck != "Authorization" {
		return sha256.Sum256(append(append(b, v...), 0))
	}
	scheme, rest := v, ""
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		scheme, rest = v[:i], strings.Trim(v[i:], " \t")
	}
	for i := range len(scheme) {
		c := scheme[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	if rest != "" {
		b = append(append(b, ' '), rest...)
	}
	return sha256.Sum256(append(b, 0))
}

// HeaderSum is the one hash of what names a caller: the SHA-256 of, for
// each list of names in turn, for each name, for each of h's values of it
// in order, the canonical name, a NUL, the value and a NUL. any reports
// whether h had a value of any of them. Callers' IDs, and the keys of what
// is kept for a caller (package onbehalf), are made by it; it keeps
// nothing it hashes. It allocates only for values of more than
// headerSumRoom bytes together.
func HeaderSum(h http.Header, names ...[]string) (sum [sha256.Size]byte, any bool) {
	var room [headerSumRoom]byte
	b := room[:0]
	for _, list := range names {
		for _, k := range list {
			ck := http.CanonicalHeaderKey(k)
			for _, v := range h[ck] {
				any = true
				b = append(append(append(append(b, ck...), 0), v...), 0)
			}
		}
	}
	return sha256.Sum256(b), any
}

// headerSumRoom is what HeaderSum hashes without allocating: a bearer
// token of a few hundred bytes with its name, or a short cookie.
const headerSumRoom = 1024

// client is the client's address as the key of its share: the peer's,
// unless the peer is trusted, then the first untrusted address named by
// the forwarding chain read from its right end (the hop nearest the
// sidecar). A hop that is not an address stops the walk at the last
// trusted one, so a client cannot pass junk off as a new caller. A peer
// that is not host:port (a Unix socket) is the one caller "local".
func (res *Resolver) client(remote string, h http.Header) string {
	chain := forwardedFor(h)
	var addr netip.Addr
	if remote == "" && len(chain) > 0 {
		// A request the sidecar built for a caller (onbehalf.SetForwarded
		// appended the caller's TCP peer as the last hop), made under a
		// context that carries no client's request.
		a, ok := parseHop(chain[len(chain)-1])
		if !ok {
			return "local"
		}
		addr, chain = a, chain[:len(chain)-1]
	} else {
		host, _, err := net.SplitHostPort(remote)
		if err != nil {
			return "local"
		}
		peer, err := netip.ParseAddr(host)
		if err != nil {
			return "local"
		}
		addr = peer.Unmap()
	}
	if res.trusted(addr) {
		for i := len(chain) - 1; i >= 0; i-- {
			a, ok := parseHop(chain[i])
			if !ok {
				break
			}
			addr = a
			if !res.trusted(a) {
				break
			}
		}
	}
	return addrKey(addr)
}

func (res *Resolver) trusted(a netip.Addr) bool {
	for _, p := range res.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// addrKey is an address as a share's key: an IPv4 address whole, an IPv6
// one by its /64 (RFC 4291 hands a host a /64; counting each address
// would let one host be 2^64 callers).
func addrKey(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// forwardedFor is the forwarding chain a trusted proxy sent, leftmost
// (the original client) first: the for= elements of Forwarded (RFC 7239)
// when present, X-Forwarded-For otherwise; each header repeated is read as
// one list, in order.
func forwardedFor(h http.Header) []string {
	var out []string
	if fw := h.Values("Forwarded"); len(fw) > 0 {
		for _, line := range fw {
			for elem := range strings.SplitSeq(line, ",") {
				for pair := range strings.SplitSeq(elem, ";") {
					k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if ok && plainhead.EqualFold(k, "for") {
						out = append(out, v)
					}
				}
			}
		}
		return out
	}
	for _, line := range h.Values("X-Forwarded-For") {
		for hop := range strings.SplitSeq(line, ",") {
			out = append(out, hop)
		}
	}
	return out
}

// parseHop reads one hop of a forwarding chain: an address, possibly
// quoted, bracketed or with a port (Forwarded's for="[2001:db8::1]:80").
func parseHop(s string) (netip.Addr, bool) {
	s = strings.Trim(strings.TrimSpace(s), `"`)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
