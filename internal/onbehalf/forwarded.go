package onbehalf

import (
	"net"
	"net/http"
	"strings"
)

// SetForwarded sets on h the caller's network identity as a request
// forwarded for r carries it, what httputil's ProxyRequest.SetXForwarded
// does: X-Forwarded-For is r's own (possibly repeated) X-Forwarded-For
// with r's client address appended, X-Forwarded-Host is the Host r was sent
// to, X-Forwarded-Proto is "https" when r came over TLS and "http"
// otherwise. Forwarded is dropped rather than passed on unchecked. An
// address that is not host:port (a listener on a Unix socket) leaves
// X-Forwarded-For out, as httputil does.
//
// Every request the sidecar sends for a caller goes through it (forwarded
// requests, the auth gate's probe, reads and listings on the caller's
// behalf), so an upstream that authorises by client address judges all of
// them alike.
func SetForwarded(h http.Header, r *http.Request) {
	SetForwardedIn(h, r, new(Forwarded))
}

// Forwarded is the room for the values SetForwardedIn sets.
type Forwarded [3]string

// SetForwardedIn is SetForwarded with the values held in room, which a
// caller that sets them once per request can keep with the request
// instead of allocating it: room must not be used again while h is.
func SetForwardedIn(h http.Header, r *http.Request, room *Forwarded) {
	delete(h, "Forwarded")
	// The three values share one backing array: one allocation (or none)
	// where a slice per header cost three. Each header's slice is capped
	// at its one value, so that an Add to one of them copies, never
	// overwriting its neighbour.
	vals := room[:]
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header["X-Forwarded-For"]; len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		vals[0] = ip
		h["X-Forwarded-For"] = vals[0:1:1]
	} else {
		delete(h, "X-Forwarded-For")
	}
	vals[1] = r.Host
	h["X-Forwarded-Host"] = vals[1:2:2]
	if r.TLS != nil {
		vals[2] = "https"
	} else {
		vals[2] = "http"
	}
	h["X-Forwarded-Proto"] = vals[2:3:3]
}
