// Package h1 owns the sidecar's HTTP/1.1 server for its MCP listener: it
// accepts connections, parses request heads and bodies, runs an
// http.Handler for each request on the connection's own goroutine, and
// frames the handler's reply, as net/http's server does for the same
// bytes, at less cost per request.
//
// net/http's server gives every request a background read of the socket
// (an extra read, a deadline change and goroutine hand-offs to stop it),
// parses every head through textproto, and flushes a reply's head and
// body separately. Here a connection's goroutine reads a head, serves the
// body from what is already buffered, and writes a complete reply of up
// to 64 KiB, head and body, in one write. The client's going away is
// watched (a read on the socket that cancels the request's context) only
// for a request that has consumed its body and is still running after a
// short delay or streams its reply (Flush): a fast call pays no read but
// its own and the next head's. Read deadlines are moved lazily: a whole
// request that arrives in one read costs no deadline change.
//
// A plain head (head.go: a request line "METHOD /target HTTP/1.x", header
// lines of a token, a colon and a value of visible bytes, every line ended
// by CRLF, at most one decimal Content-Length or a single "chunked"
// Transfer-Encoding) is parsed by this package into the request
// http.ReadRequest would make of it; any other head (obs-fold, bare LF, a
// head longer than the read buffer, an absolute-form target, a Trailer or
// Pragma field, anything net/http refuses) goes, unread, to
// http.ReadRequest, and then through the same checks net/http's server
// makes (Host, field names and values, protocol version). Either way the
// verdict and the request are net/http's.
//
// A client that half-closes its connection after a whole request still
// gets the reply of a handler that finishes before the watcher is armed;
// a handler still running then sees its context canceled, as under
// net/http, and requests it pipelined before are still served (each seeing
// the end in turn) before the connection closes. As net/http's server,
// when a reply's head goes out (at a Flush too), or when the handler
// closes the body before it, the server reads off what the handler left
// of a body of less than 256 KiB (a larger declared rest is not read: the
// connection closes after the reply), under a read deadline the handler
// set if any. Buffers a long head or a large reply
// grew are let go after the request, so an idle connection holds about
// what net/http's does.
//
// The package must not know the proxy: it serves any http.Handler, and
// it speaks neither TLS nor HTTP/2.
package h1
