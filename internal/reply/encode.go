package reply

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// ErrorMessage is the JSON-RPC error response to the request whose id is
// id (null when there is none) carrying e's code, message and data: the
// one encoding of an error the sidecar gives itself, on a reply, on a
// stream under way, or to a server's request. A Data that cannot be
// encoded is dropped.
func ErrorMessage(id json.RawMessage, e *Error) []byte {
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
	return b
}

// ResultMessage is the JSON-RPC response to the request whose id is id
// carrying result, an encoded JSON value.
func ResultMessage(id, result json.RawMessage) []byte {
	return envelope(id, `,"result":`, result)
}

// ErrorObjectMessage is the JSON-RPC error response to id carrying obj, an
// encoded error object (code, message, data) as another party wrote it:
// the upstream's error, translated between the eras.
func ErrorObjectMessage(id, obj json.RawMessage) []byte {
	return envelope(id, `,"error":`, obj)
}

func envelope(id json.RawMessage, member string, value []byte) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	const head = `{"jsonrpc":"2.0","id":`
	out := make([]byte, 0, len(head)+len(id)+len(member)+len(value)+1)
	out = append(append(append(append(out, head...), id...), member...), value...)
	return append(out, '}')
}

// Event frames one JSON-RPC message as a Server-Sent Event of type
// message without an id (each line of a multi-line message its own data
// line): the one framing of an event the sidecar writes itself.
func Event(msg []byte) []byte {
	out := append([]byte("event: message\ndata: "), bytes.ReplaceAll(msg, []byte("\n"), []byte("\ndata: "))...)
	return append(out, '\n', '\n')
}

// Answer is the reply a transport below the proxy (the era bridge) gives
// in the upstream's place: returned as RoundTrip's error, as a refusal is
// (httputil.ReverseProxy's Transport leaves its replies to the
// ErrorHandler alike), so that the proxy, the one writer, turns it into
// the reply with the caller's id (Response) and treats it as it treats
// the upstream's. Of its bodies the first set counts: Result, ErrorObject,
// Events; none is an empty body (202 Accepted, 204 No Content).
type Answer struct {
	// Status is the reply's HTTP status; 0 means 200.
	Status int
	// Header holds headers the reply carries besides its Content-Type (the
	// legacy front's Mcp-Session-Id).
	Header http.Header
	// Result is the encoded result of a success.
	Result json.RawMessage
	// ErrorObject is an encoded JSON-RPC error object (the upstream's own,
	// translated).
	ErrorObject json.RawMessage
	// Events is a stream of SSE events (each framed by Event, or the
	// upstream's own passed on), which the reply carries as it comes.
	Events io.ReadCloser
}

func (a *Answer) Error() string { return "answered below the proxy" }

// Response is a as the HTTP response to req, the request whose JSON-RPC id
// is id.
func (a *Answer) Response(req *http.Request, id json.RawMessage) *http.Response {
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	h := http.Header{}
	for k, v := range a.Header {
		h[k] = v
	}
	resp := &http.Response{StatusCode: status, Status: strconv.Itoa(status) + " " + http.StatusText(status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req, Header: h}
	var body []byte
	switch {
	case a.Result != nil:
		body = ResultMessage(id, a.Result)
	case a.ErrorObject != nil:
		body = ErrorObjectMessage(id, a.ErrorObject)
	case a.Events != nil:
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		resp.Body, resp.ContentLength = a.Events, -1
		return resp
	default:
		resp.Body = http.NoBody
		return resp
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return resp
}
