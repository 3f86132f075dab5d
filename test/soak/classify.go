package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"strings"
	"syscall"
)

// Class is how a request ended, as its client saw it.
type Class int

// The ways a request can end. Only ClassNoReply is a failure in itself: a
// result, a JSON-RPC error, an HTTP error status and a broken connection all
// tell the client how its request ended; a reply that ends cleanly with
// neither a result nor an error leaves it guessing.
const (
	// ClassResult is a JSON-RPC response with a result for the request's id.
	ClassResult Class = iota
	// ClassError is a JSON-RPC error for the request's id, or an HTTP error
	// status (4xx, 5xx) whose body is not one.
	ClassError
	// ClassTransport is a request or reply that failed on the wire: refused,
	// reset, timed out, or cut off mid-reply (an aborted stream).
	ClassTransport
	// ClassNoReply is a reply that ended cleanly without a response to the
	// request: an empty body, a 202, an SSE stream that closed before the
	// response event, or a body that is not JSON-RPC.
	ClassNoReply
)

func (c Class) String() string {
	switch c {
	case ClassResult:
		return "result"
	case ClassError:
		return "error"
	case ClassTransport:
		return "transport"
	case ClassNoReply:
		return "no-reply"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Outcome is the end of one request: its class and, for anything but a
// result, the kind it is counted under in the report.
type Outcome struct {
	// Class is how the request ended.
	Class Class
	// Kind names an error for counting, e.g. "http 502, code -32603,
	// reason upstream_unreachable" or "transport: connection refused"; it is
	// "" for a result.
	Kind string
}

// rpcResponse is the part of a JSON-RPC response the soak looks at.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
}

// Classify reads how a request with JSON-RPC id (its encoded form, e.g.
// `17`) ended from the reply's HTTP status, Content-Type and whole body. A
// text/event-stream body is searched event by event for the response; any
// other body must be one JSON-RPC response.
func Classify(status int, contentType string, body []byte, id string) Outcome {
	o, _ := classify(status, contentType, body, id)
	return o
}

// classify is Classify that also returns the response's result, if any.
func classify(status int, contentType string, body []byte, id string) (Outcome, json.RawMessage) {
	mt, _, _ := mime.ParseMediaType(contentType)
	var resp *rpcResponse
	if mt == "text/event-stream" {
		resp = findInSSE(body, id)
	} else {
		resp = matchResponse(body, id)
	}
	switch {
	case resp != nil && resp.Error != nil:
		return Outcome{Class: ClassError, Kind: fmt.Sprintf("http %d, code %d, reason %s", status, resp.Error.Code, reason(resp.Error.Data))}, nil
	case resp != nil:
		return Outcome{Class: ClassResult}, resp.Result
	case status >= 400:
		return Outcome{Class: ClassError, Kind: fmt.Sprintf("http %d, not JSON-RPC", status)}, nil
	}
	return Outcome{Class: ClassNoReply, Kind: fmt.Sprintf("http %d %s, ended without result or error", status, orDash(mt))}, nil
}

// matchResponse decodes b as one JSON-RPC response to id carrying a result
// or an error; nil when it is anything else.
func matchResponse(b []byte, id string) *rpcResponse {
	var r rpcResponse
	if json.Unmarshal(b, &r) != nil || !bytes.Equal(bytes.TrimSpace(r.ID), []byte(id)) {
		return nil
	}
	if r.Error == nil && (len(r.Result) == 0 || string(r.Result) == "null") {
		return nil
	}
	return &r
}

// findInSSE scans an SSE body (WHATWG HTML, server-sent events: fields
// "data:" joined by newlines, events ended by a blank line, CR LF or LF) for
// the response to id. Progress notifications and other messages are skipped.
func findInSSE(body []byte, id string) *rpcResponse {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), len(body)+1)
	var data []byte
	flush := func() *rpcResponse {
		defer func() { data = data[:0] }()
		if len(data) == 0 {
			return nil
		}
		return matchResponse(data, id)
	}
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if len(line) == 0 {
			if r := flush(); r != nil {
				return r
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	// An event not ended by a blank line is incomplete and is dropped, as
	// the SSE specification says.
	return nil
}

// reason returns data.reason of a JSON-RPC error, or "-".
func reason(data json.RawMessage) string {
	var d struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(data, &d) != nil || d.Reason == "" {
		return "-"
	}
	return d.Reason
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ClassifyTransport names a wire failure. midReply says the reply's headers
// had arrived, so the failure cut a reply off.
func ClassifyTransport(err error, midReply bool) Outcome {
	var ne net.Error
	var kind string
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		kind = "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		kind = "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		kind = "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		kind = "unexpected EOF"
	case errors.Is(err, context.Canceled):
		kind = "canceled"
	default:
		kind = "other"
	}
	where := "request"
	if midReply {
		where = "reply cut off"
	}
	return Outcome{Class: ClassTransport, Kind: "transport: " + where + ": " + kind}
}

// isSessionGone reports whether an outcome says the session is unknown to
// the server (HTTP 404, as after an upstream restart): the client must
// initialize a new one (MCP 2025-11-25, transports, session management).
func isSessionGone(o Outcome) bool {
	return o.Class == ClassError && strings.HasPrefix(o.Kind, "http 404")
}
