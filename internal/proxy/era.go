package proxy

import "github.com/skills-sidecar/skills-sidecar/internal/bridge"

// discoverSplicer returns the edit for a server/discover reply: the
// declaration is spliced only into a reply whose supportedVersions names
// 2026-07-28. A legacy-only upstream (go-sdk without Stateless) answers
// server/discover listing only legacy versions; declaring the sidecar's
// methods there would promise a client the modern wire that the rest of
// the server refuses. With the era bridge, the reply the bridge builds
// names 2026-07-28 and is spliced like any other.
func (p *Proxy) discoverSplicer() func(msg []byte) []byte {
	splice := p.splicer(eraModern)
	return func(msg []byte) []byte {
		if !bridge.SpeaksModern(msg) {
			return msg
		}
		return splice(msg)
	}
}
