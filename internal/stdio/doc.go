// Package stdio owns running an MCP server that speaks the stdio transport
// (newline-delimited JSON-RPC on its stdin and stdout) as the sidecar's
// upstream. Its Transport is an http.RoundTripper that answers the
// streamable HTTP requests the rest of the sidecar sends to the upstream as
// the server's own streamable HTTP transport would, so declarations,
// skills, the era bridge and notifications work unchanged in front of it.
//
// Sessions and eras: a legacy initialize gets a process of its own, under
// a session id the Transport mints (a stdio server's legacy session is its
// process); DELETE, the idle timeout or the process's end end it, and the
// next request on it gets 404 so the client re-initializes. The number of
// these processes is bounded, with a per-caller share, and so are the
// calls in flight on each (DefaultMaxSessionCalls). When the server
// answers server/discover (asked once, in a probe process then ended),
// 2026-07-28 requests share one long-lived process, whose calls in flight
// are bounded too, with a per-caller share (Transport.Calls); and so are
// the bytes held for callers' streams, every process together (budget:
// MaxQueued). On every pipe each
// request carries an id the Transport minted (package idmap, as the era
// bridge's held sessions do), and what names it is mapped
// back: the reply, progressToken (minted too on the shared process), the
// requestId of notifications/cancelled and a listen's subscription id.
// A message naming no request goes to the POST stream of the one request
// in flight if there is exactly one, else to the legacy session's GET
// stream, else it is dropped and counted. SSE events carry no id: there is
// no Last-Event-ID resumption.
//
// A process is a fault domain: its end answers its calls in flight with a
// JSON-RPC error at once; a crashed shared process is started again on the
// next request, after a backoff; stdout lines that are not JSON-RPC are
// skipped and counted; a line over MaxLine fails only the call it answers;
// stderr goes to the log, bounded and tagged. Every request has a timeout
// that, when it fires, sends notifications/cancelled. A process runs in a
// group of its own with a parent-death signal, and is ended as the
// transport text says: stdin closed, then SIGTERM, then SIGKILL of the
// group.
//
// It must not write to a client or import the proxy: it returns
// http.Responses like any upstream; it never re-encodes a message beyond
// splicing the one member it maps (rewrite.SetKey).
package stdio
