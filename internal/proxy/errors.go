package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

// upstreamError maps a transport failure talking to the upstream to the reply
// the client gets: 504 for a timeout, 502 for everything else, with a reason
// in data so that clients and operators can tell them apart. The message
// says what happened and nothing more: never err's text, which names socket
// addresses (and, from net/http, the URL with its query); the request's log
// line keeps that detail (record.go). nginx answers its own 502 and 504
// pages the same way, with the cause in its error log only.
func upstreamError(err error) *reply.Error {
	var ne net.Error
	upstream := func(status int, message, reason string) *reply.Error {
		return &reply.Error{Status: status, Code: reply.CodeInternalError, Message: message,
			Data: map[string]string{"reason": reason}}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return upstream(http.StatusGatewayTimeout, "upstream timed out", "upstream_timeout")
	case errors.Is(err, syscall.ECONNREFUSED):
		return upstream(http.StatusBadGateway, "upstream refused the connection", "upstream_unreachable")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return upstream(http.StatusBadGateway, "upstream reset the connection", "upstream_error")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return upstream(http.StatusBadGateway, "upstream closed the connection without a reply", "upstream_error")
	case errors.As(err, new(*net.DNSError)):
		return upstream(http.StatusBadGateway, "upstream host not found", "upstream_unreachable")
	default:
		return upstream(http.StatusBadGateway, "upstream failed", "upstream_error")
	}
}

// WriteReply writes the sidecar's own answer rep to the request whose id
// is id: the one place where a reply of package methods or the gate
// becomes bytes on the wire, always with the caller's id.
func WriteReply(w http.ResponseWriter, id json.RawMessage, rep reply.Reply) {
	switch {
	case rep.Err != nil:
		writeFailure(w, id, rep.Err)
	case rep.Body != nil:
		writeResultStream(w, id, rep.Body.Len(), rep.Body.Encode)
	default:
		writeResult(w, id, rep.Result)
	}
}

// writeFailure writes the error of a reply: the upstream's refusal of a
// call made on the caller's behalf passed on, a JSON-RPC error as it is,
// or the failure of such a call mapped as NoReplyError (no reply at all)
// or upstreamError (anything else) map it. The error's own text never
// reaches the caller: it may name the upstream's URL and addresses.
func writeFailure(w http.ResponseWriter, id json.RawMessage, err error) {
	var ref *onbehalf.Refusal
	var e *reply.Error
	switch {
	case errors.As(err, &ref):
		writeRefusal(w, id, ref)
	case errors.As(err, &e):
		writeError(w, id, e)
	case errors.Is(err, onbehalf.ErrUnreachable):
		writeError(w, id, NoReplyError(err))
	default:
		writeError(w, id, upstreamError(err))
	}
}

// writeError is the one place where JSON-RPC errors become wire
// replies: a JSON-RPC error object echoing the request's raw id (null when
// there is none) with the status of e.
func writeError(w http.ResponseWriter, id json.RawMessage, e *reply.Error) {
	b := reply.ErrorMessage(id, e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// writeResult writes a JSON-RPC success reply carrying result (an encoded
// JSON value) and echoing the request's raw id, as application/json.
func writeResult(w http.ResponseWriter, id json.RawMessage, result []byte) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	// The envelope around result is written piece by piece: the server's
	// buffer joins them, and a large result (a listing page) is not copied
	// into a second buffer first.
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = []string{strconv.Itoa(len(head) + len(id) + len(mid) + len(result) + 1)}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, head)
	_, _ = w.Write(id)
	_, _ = io.WriteString(w, mid)
	_, _ = w.Write(result)
	_, _ = io.WriteString(w, "}") // a string: no shared slice a writer could touch
}

// writeResultStream is writeResult for a result of exactly n bytes that
// write produces itself, a piece at a time: a large result (a skill file)
// then goes to the client from bytes already held, not from a copy built
// for each request, so a client that reads slowly holds no more than
// write's own buffer. A write error (the client went away) ends it.
func writeResultStream(w http.ResponseWriter, id json.RawMessage, n int, write func(io.Writer) error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = []string{strconv.Itoa(len(head) + len(id) + len(mid) + n + 1)}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, head)
	_, _ = w.Write(id)
	_, _ = io.WriteString(w, mid)
	if write(w) == nil {
		_, _ = io.WriteString(w, "}")
	}
}

// contentTypeJSON is shared by every reply's header map; nothing appends to
// or edits a header value in place, and its capacity of one makes an
// append copy it.
var contentTypeJSON = []string{"application/json"}

// NoReplyError maps the failure of a request the sidecar made on a caller's
// behalf (the auth gate's probe, a digest probe, a tools/list fetch) that
// got no HTTP reply at all: 504 upstream_timeout for a timeout, otherwise 502
// upstream_unreachable, whether the dial was refused or a pooled connection
// turned out dead (EOF, reset). Unlike upstreamError it never says
// upstream_error: with no reply there is nothing the upstream said wrong.
// Its message is upstreamError's, which names no address.
func NoReplyError(err error) *reply.Error {
	e := upstreamError(err)
	if e.Status == http.StatusGatewayTimeout {
		return e
	}
	return &reply.Error{Status: http.StatusBadGateway, Code: reply.CodeInternalError, Message: e.Message,
		Data: map[string]string{"reason": "upstream_unreachable"}}
}
