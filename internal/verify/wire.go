package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Wire constants (SEP-2575 and the streamable HTTP transport).
const (
	modernVersion = "2026-07-28"
	legacyVersion = "2025-11-25"

	metaProtocol   = "io.modelcontextprotocol/protocolVersion"
	metaClientCaps = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo = "io.modelcontextprotocol/clientInfo"

	headerProtocol = "MCP-Protocol-Version"
	headerMethod   = "Mcp-Method"
	headerName     = "Mcp-Name"
	headerSession  = "Mcp-Session-Id"

	codeInvalidParams  = -32602
	codeResourceLegacy = -32002
)

// Sentinel errors of the wire client. Run maps them to exit codes.
var (
	// ErrAuthRequired means the server answered 401 or 403.
	ErrAuthRequired = errors.New("verify: server requires authorization")
	// ErrUnreachable means no HTTP response came back (refused, reset,
	// timed out, bad address).
	ErrUnreachable = errors.New("verify: server unreachable")
	// ErrTooLarge means a response body or SSE event exceeded its bound.
	ErrTooLarge = errors.New("verify: response over the read bound")
	// ErrBadResponse means the reply is not a JSON-RPC response to the request.
	ErrBadResponse = errors.New("verify: malformed response")
)

// RPCError is a JSON-RPC error object returned by the server, with the HTTP
// status that carried it.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	// Status is the HTTP status of the reply.
	Status int `json:"-"`
}

// Error returns the code and message.
func (e *RPCError) Error() string {
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

// client speaks JSON-RPC over the streamable HTTP transport, one POST per
// request, with no background streams. It is not safe for concurrent use.
type client struct {
	endpoint string
	http     *http.Client
	// maxBody bounds each response body (and each SSE event).
	maxBody int64

	modern    bool   // send the SEP-2575 _meta and headers
	version   string // negotiated protocol version ("" before the handshake)
	sessionID string
	nextID    int64
}

// rpcMessage is the part of a JSON-RPC message the client looks at.
type rpcMessage struct {
	JSONRPC string
	ID      json.RawMessage
	Method  string
	Result  json.RawMessage
	Error   *RPCError
	raw     []byte // the whole message
}

// call sends one request and returns its raw result. A JSON-RPC error comes
// back as *RPCError; HTTP 401/403 wraps ErrAuthRequired; a transport failure
// wraps ErrUnreachable.
func (c *client) call(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	if c.modern {
		params["_meta"] = map[string]any{
			metaProtocol:   modernVersion,
			metaClientCaps: map[string]any{},
			metaClientInfo: map[string]any{"name": "skills-sidecar-verify", "version": "1"},
		}
	}
	c.nextID++
	id := c.nextID
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", method, ErrUnreachable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.setHeaders(req.Header, method, params)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", method, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil, fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, ErrAuthRequired)
	}
	if sid := resp.Header.Get(headerSession); sid != "" && c.sessionID == "" && !c.modern {
		c.sessionID = sid
	}
	msg, err := c.readReply(resp, strconv.FormatInt(id, 10))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if p := twoWays(msg.raw); p != "" {
		return nil, fmt.Errorf("%s: clients could read the reply two ways: %s: %w", method, p, ErrBadResponse)
	}
	if msg.Error != nil {
		msg.Error.Status = resp.StatusCode
		return nil, msg.Error
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: HTTP %d with a result: %w", method, resp.StatusCode, ErrBadResponse)
	}
	if len(msg.Result) == 0 || string(msg.Result) == "null" {
		return nil, fmt.Errorf("%s: response has neither result nor error: %w", method, ErrBadResponse)
	}
	return msg.Result, nil
}

func (c *client) setHeaders(h http.Header, method string, params map[string]any) {
	if c.version != "" {
		h.Set(headerProtocol, c.version)
	}
	if c.sessionID != "" {
		h.Set(headerSession, c.sessionID)
	}
	if !c.modern {
		return
	}
	h.Set(headerProtocol, modernVersion)
	h.Set(headerMethod, method)
	var key string
	switch method {
	case "resources/read":
		key = "uri"
	case "tools/call", "prompts/get":
		key = "name"
	}
	if s, ok := params[key].(string); ok && key != "" {
		h.Set(headerName, s)
	}
}

// readReply finds the response with the given id in a JSON or SSE reply.
func (c *client) readReply(resp *http.Response, id string) (*rpcMessage, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		var found *rpcMessage
		err := readSSE(resp.Body, int(c.maxBody), func(ev sseEvent) bool {
			if ev.name != "" && ev.name != "message" {
				return false
			}
			m, err := decodeMessage(ev.data)
			if err != nil || string(m.ID) != id || m.Method != "" {
				return false // notifications and server requests are not ours
			}
			found = m
			return true
		})
		if err != nil {
			return nil, err
		}
		if found == nil {
			return nil, fmt.Errorf("SSE stream (HTTP %d) ended without the response: %w", resp.StatusCode, ErrBadResponse)
		}
		return found, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w: %w", ErrUnreachable, err)
	}
	if int64(len(b)) > c.maxBody {
		return nil, fmt.Errorf("body over %d bytes: %w", c.maxBody, ErrTooLarge)
	}
	m, err := decodeMessage(b)
	if err != nil {
		return nil, fmt.Errorf("HTTP %d %q: %w", resp.StatusCode, snippet(b), err)
	}
	if m.Error == nil && string(m.ID) != id {
		return nil, fmt.Errorf("response id %s, want %s: %w", m.ID, id, ErrBadResponse)
	}
	return m, nil
}

// decodeMessage parses one JSON-RPC message, its member names read
// exactly (members).
func decodeMessage(b []byte) (*rpcMessage, error) {
	m := rpcMessage{raw: b}
	if err := readMessage(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if m.JSONRPC != "2.0" {
		return nil, fmt.Errorf("%w: jsonrpc is %q, want \"2.0\"", ErrBadResponse, m.JSONRPC)
	}
	return &m, nil
}

func readMessage(b []byte, m *rpcMessage) error {
	obj, err := members(b)
	if err != nil {
		return err
	}
	if _, err := member(obj, "jsonrpc", &m.JSONRPC); err != nil {
		return fmt.Errorf("jsonrpc: %w", err)
	}
	if _, err := member(obj, "method", &m.Method); err != nil {
		return fmt.Errorf("method: %w", err)
	}
	m.ID, m.Result = obj["id"], obj["result"]
	raw, ok := obj["error"]
	if !ok || string(raw) == "null" {
		return nil
	}
	e, err := members(raw)
	if err != nil {
		return fmt.Errorf("error: %w", err)
	}
	m.Error = &RPCError{Data: e["data"]}
	if _, err := member(e, "code", &m.Error.Code); err != nil {
		return fmt.Errorf("error.code: %w", err)
	}
	if _, err := member(e, "message", &m.Error.Message); err != nil {
		return fmt.Errorf("error.message: %w", err)
	}
	return nil
}

func snippet(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// closeSession ends a legacy session with DELETE, as a polite client does.
// Errors are ignored: the report is already complete.
func (c *client) closeSession(ctx context.Context) {
	if c.sessionID == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil)
	if err != nil {
		return
	}
	req.Header.Set(headerSession, c.sessionID)
	if c.version != "" {
		req.Header.Set(headerProtocol, c.version)
	}
	if resp, err := c.http.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	id   string
	data []byte
}

// readSSE parses a text/event-stream and calls fn for each event that has
// data, until fn returns true or the stream ends. Lines end in LF, CRLF or
// CR; lines starting with ':' are comments; several data lines join with
// LF. An event (or a line) over maxEvent bytes is ErrTooLarge.
func readSSE(r io.Reader, maxEvent int, fn func(sseEvent) bool) error {
	br := bufio.NewReader(r)
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	size := 0
	for {
		line, err := readLine(br, maxEvent)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		eof := errors.Is(err, io.EOF)
		if line == nil && eof {
			if hasData { // a final event without its blank line still counts
				ev.data = data.Bytes()
				fn(ev)
			}
			return nil
		}
		size += len(line) + 1
		if size > maxEvent {
			return fmt.Errorf("SSE event over %d bytes: %w", maxEvent, ErrTooLarge)
		}
		switch {
		case len(line) == 0:
			if hasData {
				ev.data = data.Bytes()
				if fn(ev) {
					return nil
				}
			}
			ev, hasData, size = sseEvent{}, false, 0
			data = bytes.Buffer{}
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if hasData {
					data.WriteByte('\n')
				}
				data.Write(value)
				hasData = true
			case "event":
				ev.name = string(value)
			case "id":
				ev.id = string(value)
			}
		}
		if eof {
			if hasData {
				ev.data = data.Bytes()
				fn(ev)
			}
			return nil
		}
	}
}

// readLine reads one line ending in LF, CRLF or CR, without its ending. At
// the end of the stream it returns the last partial line (or nil) and io.EOF.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("read SSE: %w: %w", ErrUnreachable, err)
		}
		switch b {
		case '\n':
			return nonNil(line), nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				_, _ = br.ReadByte()
			}
			return nonNil(line), nil
		}
		if len(line) >= max {
			return nil, fmt.Errorf("SSE line over %d bytes: %w", max, ErrTooLarge)
		}
		line = append(line, b)
	}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) == 0 {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	for k, vs := range t.header {
		r.Header.Del(k)
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// parseHeader parses a --header value "Key: Value".
func parseHeader(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, ":")
	k = strings.TrimSpace(k)
	if !ok || k == "" || strings.ContainsAny(k, " \t\r\n") || strings.ContainsAny(v, "\r\n") {
		return "", "", fmt.Errorf("header %q is not of the form 'Key: Value'", s)
	}
	return http.CanonicalHeaderKey(k), strings.TrimSpace(v), nil
}

// notify sends a notification and expects 202 (or any 2xx) with no reply.
func (c *client) notify(ctx context.Context, method string) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w: %w", method, ErrUnreachable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.setHeaders(req.Header, method, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", method, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, ErrAuthRequired)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s: HTTP %d, want 202: %w", method, resp.StatusCode, ErrBadResponse)
	}
	return nil
}
