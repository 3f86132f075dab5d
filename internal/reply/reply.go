// Package reply owns the value of a reply the sidecar gives itself rather
// than forwarding: a JSON-RPC result (bytes, or a [Body] written as it is
// encoded), or an error, of which [Error] is the one JSON-RPC error type and
// the constants below the one set of codes. The sidecar's own methods
// (package methods) and the auth gate return these values; package proxy
// alone turns them into wire replies, always with the id of the caller's
// request, so no answer can carry another id (docs/design.md, decision 11).
// A transport below the proxy (the era bridge) returns its own answers as
// an [Answer], RoundTrip's error. encode.go is the one encoding of these
// values as JSON-RPC messages and SSE events, which the proxy writes and
// the bridge puts on a stream already under way: no other package builds
// a reply or frames an event of the sidecar's own (onewriter_test.go at
// the repository's root). It must not write a reply nor do I/O.
package reply

import (
	"fmt"
	"io"
	"net/http"
)

// JSON-RPC error codes the sidecar answers with: JSON-RPC 2.0's, and the
// MCP ones of its own methods.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeResourceNotFound is resources/read's not-found on the legacy wire
	// (the modern wire uses CodeInvalidParams).
	CodeResourceNotFound = -32002
	// CodeHeaderMismatch: an MCP header disagrees with the body (2026-07-28).
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability: a request needs a client capability the
	// client did not declare (2026-07-28).
	CodeMissingClientCapability = -32021
	// CodeUnsupportedVersion: a protocol version the sidecar does not speak.
	CodeUnsupportedVersion = -32022
	// CodeMethodNotFound is JSON-RPC 2.0's: a method the server does not
	// have (the era bridge's answer to a removed or unknown method).
	CodeMethodNotFound = -32601

	// The legacy wire's numbers for three of the errors above, which the
	// 2026-07-28 revision renumbered (docs/protocol.md §6); the era bridge maps
	// between them.
	CodeLegacyHeaderMismatch     = -32001
	CodeLegacyMissingClientCap   = -32003
	CodeLegacyUnsupportedVersion = -32004
)

// Error is a JSON-RPC error and the HTTP status that carries it.
type Error struct {
	Status  int
	Code    int
	Message string
	// Data is the error's data member; nil omits it.
	Data any
	// RetryAfter, when positive, is sent as the Retry-After header, in
	// seconds (a refusal over a caller's share: HTTP 429).
	RetryAfter int
}

func (e *Error) Error() string { return e.Message }

// TooLarge is the error for a request body over limit bytes: HTTP 413,
// Invalid Request. The proxy answers it for max-body-bytes, the stdio
// adapter for its own bound.
func TooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeInvalidRequest,
		Message: fmt.Sprintf("request body larger than %d bytes", limit)}
}

// Body is a result written a piece at a time: exactly Len bytes of JSON,
// which Encode writes to w (a large skill file, encoded as it is read, so a
// slow reader holds one chunk, not a copy of the file). A write error (the
// client went away) ends it.
type Body interface {
	Len() int
	Encode(w io.Writer) error
}

// Reply is the sidecar's own answer to one request. Exactly one of its
// fields matters, in this order: Err, when set, is the failure to report:
// an *Error as it is, the upstream's refusal of a call made on the caller's
// behalf (an *onbehalf.Refusal, passed on), or any other error of such a
// call, which the proxy maps to a 502 or 504; else Body, when set, is the
// result; else Result, an encoded JSON value.
type Reply struct {
	Result []byte
	Body   Body
	Err    error
}
