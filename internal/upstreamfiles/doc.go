// Package upstreamfiles owns the upstream-served skill files: learning
// which catalog URIs the upstream serves itself, and what it serves for
// them, per authorization context (Overlay, overlay.go). Who serves a URI
// comes from the upstream's own resources/list and
// resources/templates/list, taken on the caller's behalf (discovery.go;
// URI templates matched by uritemplate.go, within a length limit); the
// digest, size and SKILL.md frontmatter of a served file come from a read
// of its own or from a forwarded read hashed as it passes (readwatch.go,
// readscan.go: published only when every client would take the same reply,
// replyid.go). A handshake declaring the skills extension may start this
// learning early (prefetch.go).
//
// It returns verdicts (Served, Listing); it must not encode skills/list,
// resources/list or directory entries (package methods owns those shapes
// and applies the verdicts), answer or write anything to a caller, or
// build a request of its own: every request it makes goes through
// onbehalf.Upstream with the caller's credentials. It must not import
// package methods or the proxy.
package upstreamfiles
