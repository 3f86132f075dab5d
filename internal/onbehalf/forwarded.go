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
	delete(h, "Forwarded")
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header["X-Forwarded-For"]; len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		h["X-Forwarded-For"] = []string{ip}
	} else {
		delete(h, "X-Forwarded-For")
	}
	h["X-Forwarded-Host"] = []string{r.Host}
	if r.TLS != nil {
		h["X-Forwarded-Proto"] = []string{"https"}
	} else {
		h["X-Forwarded-Proto"] = []string{"http"}
	}
}
