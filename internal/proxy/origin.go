package proxy

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
)

// DNS rebinding protection, which the MCP transport spec asks of every
// server: a page on evil.example whose name is made to resolve to this
// machine sends Host: evil.example and Origin: http://evil.example. The
// upstream cannot see that Host (the relay sends the upstream's own, or a
// go-sdk upstream on loopback would refuse every request), so the sidecar
// makes the check itself, by go-sdk's rule: on a loopback listener a Host
// that is not loopback is refused with 403.

// hostAllowed decides the Host check. A loopback Host (localhost,
// 127.0.0.0/8, [::1], any port) and a Host in allowed are always allowed.
// Otherwise a request that arrived on a loopback listener is refused, as
// go-sdk's StreamableHTTPHandler refuses it; on any other listener an empty
// allowed list lets every Host through (in a pod, Hosts are Service names
// nobody can list in advance), and a non-empty one is the whole list.
func hostAllowed(host string, loopbackListener bool, allowed []string) bool {
	if loopbackHost(host) || hostListed(host, allowed) {
		return true
	}
	return !loopbackListener && len(allowed) == 0
}

// hostListed reports whether host (a Host header: name or name:port) is in
// allowed: an entry with a port must match it whole, an entry without one
// matches the name on any port, "*" matches everything; ASCII
// case-insensitive, as host names compare (RFC 4343).
func hostListed(host string, allowed []string) bool {
	name := hostName(host)
	for _, a := range allowed {
		if a == "*" || plainhead.EqualFold(a, host) || plainhead.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// hostName is host without its port and without the brackets of an IP
// literal: one "[" first and one "]" last, together, as net.SplitHostPort
// takes them off when there is a port. A stray bracket stays, so that
// "localhost]" or "]]]127.0.0.1" names nothing.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	return host
}

// loopbackHost reports whether host (with or without a port) names this
// machine: localhost (ASCII letters in any case, nothing else folded) or a
// loopback address. Not "*.localhost": go-sdk does not accept it either.
func loopbackHost(host string) bool {
	name := hostName(host)
	if plainhead.EqualFold(name, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.IsLoopback()
}

// loopbackListener reports whether r arrived on a loopback listener:
// Options.Listener's address when set, else the connection's local
// address, which net/http records.
func (p *Proxy) loopbackListener(r *http.Request) bool {
	if p.opts.Listener != nil {
		return addrLoopback(p.opts.Listener)
	}
	a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return addrLoopback(a)
}

func addrLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case net.Addr:
		return loopbackHost(a.String())
	}
	return false
}

// originAllowed decides the Origin check of the MCP transport spec: servers
// must refuse a present, invalid Origin with 403 to stop DNS rebinding. An
// origin is allowed when it is listed (or the list holds "*"), when its host
// is loopback (a local client or Inspector talking to a sidecar on this
// machine), or when it is the host the request was addressed to and that
// host is itself vouched for (hostVouched: loopback or in allowed-hosts).
// Matching the Host alone is not enough: a rebinding page sends an Origin
// equal to its own Host.
func originAllowed(origin, host string, hostVouched bool, allowed []string) bool {
	for _, a := range allowed {
		if a == "*" || plainhead.EqualFold(a, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if hostVouched && plainhead.EqualFold(u.Host, host) {
		return true
	}
	return loopbackHost(u.Host)
}
