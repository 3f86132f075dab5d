package proxy

import (
	"net"
	"net/url"
	"strings"
)

// originAllowed decides the Origin check of the MCP transport spec: servers
// must refuse a present, invalid Origin with 403 to stop DNS rebinding. An
// origin is allowed when it is listed (or the list holds "*"), when its host
// is the host the request was addressed to, or when its host is loopback
// (a local client or Inspector talking to a sidecar on this machine).
func originAllowed(origin, host string, allowed []string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(a, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
