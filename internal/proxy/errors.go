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
)

// JSON-RPC error codes the proxy itself answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a failure the proxy reports to the client: a JSON-RPC error and
// the HTTP status that carries it.
type Error struct {
	Status  int
	Code    int
	Message string
	// Data is the error's data member; nil omits it.
	Data any
}

func (e *Error) Error() string { return e.Message }

// UpstreamError maps a transport failure talking to the upstream to the reply
// the client gets: 504 for a timeout, 502 for everything else, with a reason
// in data so that clients and operators can tell them apart.
func UpstreamError(err error) *Error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &Error{Status: http.StatusGatewayTimeout, Code: CodeInternalError,
			Message: "upstream did not answer in time: " + err.Error(),
			Data:    map[string]string{"reason": "upstream_timeout"}}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &Error{Status: http.StatusBadGateway, Code: CodeInternalError,
			Message: "upstream refused the connection: " + err.Error(),
			Data:    map[string]string{"reason": "upstream_unreachable"}}
	default:
		return &Error{Status: http.StatusBadGateway, Code: CodeInternalError,
			Message: "upstream failed: " + err.Error(),
			Data:    map[string]string{"reason": "upstream_error"}}
	}
}

// WriteError is the one place where the proxy's own failures become wire
// replies: a JSON-RPC error object echoing the request's raw id (null when
// there is none) with the status of e.
func WriteError(w http.ResponseWriter, id json.RawMessage, e *Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	body.Error.Code, body.Error.Message, body.Error.Data = e.Code, e.Message, e.Data
	b, err := json.Marshal(body)
	if err != nil { // only a Data that cannot be encoded; drop it
		body.Error.Data = nil
		b, _ = json.Marshal(body)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// WriteResult writes a JSON-RPC success reply carrying result (an encoded
// JSON value) and echoing the request's raw id, as application/json.
func WriteResult(w http.ResponseWriter, id json.RawMessage, result []byte) {
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

// WriteResultStream is WriteResult for a result of exactly n bytes that
// write produces itself, a piece at a time: a large result (a skill file)
// then goes to the client from bytes already held, not from a copy built
// for each request, so a client that reads slowly holds no more than
// write's own buffer. A write error (the client went away) ends it.
func WriteResultStream(w http.ResponseWriter, id json.RawMessage, n int, write func(io.Writer) error) {
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
