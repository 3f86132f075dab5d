// Package wire owns the one definition of the 2026-07-28 MCP wire's
// request rules that several packages must agree on: its constants (the
// protocol version, the _meta keys, the routing headers), the predicate
// "does this request claim the modern era?" ([ClaimsModern]), the check of
// the routing headers against the body ([CheckHeaders]: present and
// equal, HTTP 400 -32020 otherwise), and the Mcp-Name header value
// encoding both ways ([EncodeHeaderValue], [DecodeHeaderValue]: plain
// visible ASCII, otherwise =?base64?…?=), and the media type of a
// Content-Type ([MediaType]).
//
// The proxy, the sidecar's own methods, the requests made on a caller's
// behalf and the era bridge all ask it; none may keep a copy. It is pure
// and must stay so: values in, values out, no I/O, no clock, no logger.
package wire
