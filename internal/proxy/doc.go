// Package proxy owns the sidecar's MCP listener path: reading the envelope of
// each request, routing it (answered by the sidecar or forwarded), forwarding
// streamable HTTP to the upstream through its own relay over package hop's
// connections (relay.go says why not httputil.ReverseProxy), applying the
// response hooks (declaration splicing), and writing every reply the sidecar
// gives itself: the answers of package methods and the gate's refusals,
// returned to it as package reply's values (WriteReply), the era bridge's
// answers returned by its transport as reply.Answer (relay.go), and every failure
// as one JSON-RPC error with the HTTP status the spec names, always with the
// caller's id.
//
// It must not parse or re-encode what it does not change: bodies it forwards
// untouched are streamed as they come, SSE events are passed through by their
// raw bytes, and the pure transformations live in internal/rewrite. It holds
// no state beyond the streams it is serving, so any number of replicas work.
package proxy
