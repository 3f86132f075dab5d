package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrParse reports bytes that are not valid JSON. The proxy answers it with
// JSON-RPC error -32700 (Parse error).
var ErrParse = errors.New("rewrite: not valid JSON")

// ErrInvalidRequest reports valid JSON that is not a JSON-RPC 2.0 request,
// notification or response. The proxy answers it with -32600 (Invalid
// Request).
var ErrInvalidRequest = errors.New("rewrite: not a JSON-RPC message")

// ErrTooDeep reports JSON nested deeper than a caller's limit.
var ErrTooDeep = errors.New("rewrite: JSON nested too deep")

// Kind is what a JSON-RPC message is. The zero Kind is KindInvalid.
type Kind int

// The kinds of JSON-RPC 2.0 message.
const (
	KindInvalid      Kind = iota // not a JSON-RPC message
	KindRequest                  // method and id
	KindNotification             // method, no id
	KindResponse                 // id and result
	KindError                    // id (maybe null) and error
)

// String returns the kind's name, for logs and test failures.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	case KindError:
		return "error"
	}
	return "invalid"
}

// Message is the envelope of one JSON-RPC message. Every json.RawMessage is
// a sub-slice of the parsed bytes, exactly as sent (never re-encoded), so
// an id echoed from it matches the client's byte for byte. A field that was
// absent is nil. Of duplicate keys the last counts, as in encoding/json.
type Message struct {
	Kind   Kind
	ID     json.RawMessage // nil for a notification
	Method string          // unescaped; "" for a response
	Params json.RawMessage // requests and notifications
	Result json.RawMessage // KindResponse
	Error  json.RawMessage // KindError: the error object
	Raw    json.RawMessage // the whole message without surrounding whitespace
}

// ParseMessage parses one JSON-RPC 2.0 message. It returns an error wrapping
// ErrParse when b is not JSON and ErrInvalidRequest when it is JSON but not a
// request, notification or response; with ErrInvalidRequest the Message
// still carries the id when one of a valid type was present, so that the
// error reply can echo it.
func ParseMessage(b []byte) (Message, error) {
	if !valid(b) {
		return Message{}, fmt.Errorf("parse message: %w", ErrParse)
	}
	return parseValid(trimWS(b))
}

// Parsed is a request body that knows the one message it holds, because
// its sender parsed it already: the proxy's requests to its upstream are
// such, so a transport below that must know a request's message (the era
// bridge, the stdio adapter) does not parse the same bytes a second time.
// ParsedMessage reports false when the body holds no single message (a
// batch) or when any of it was read: the message is always the one of the
// bytes left to send.
type Parsed interface {
	ParsedMessage() (Message, bool)
}

// MessageOf returns the message of a request body that knows it (Parsed),
// and false for any other body: its bytes are then the caller's to parse.
func MessageOf(body any) (Message, bool) {
	if p, ok := body.(Parsed); ok {
		return p.ParsedMessage()
	}
	return Message{}, false
}

// ParseBody parses a POST body: one message, or a JSON array of messages (a
// 2025-03-26 batch, reported by batch). Every element of a batch is parsed
// and returned, invalid ones with KindInvalid; the error then wraps
// ErrInvalidRequest and names the first bad element, so the caller chooses
// between rejecting the batch and answering element by element. An empty
// batch is ErrInvalidRequest with no messages; bytes that are not JSON are
// ErrParse.
func ParseBody(b []byte) (msgs []Message, batch bool, err error) {
	return ParseBodyInto(b, nil)
}

// ParseBodyInto is ParseBody with room for a lone message: when b holds
// one (no batch) msgs is one[:], where ParseBody allocates a slice for it.
// A nil one is ParseBody.
func ParseBodyInto(b []byte, one *[1]Message) (msgs []Message, batch bool, err error) {
	if !valid(b) {
		return nil, false, fmt.Errorf("parse body: %w", ErrParse)
	}
	b = trimWS(b)
	if b[0] != '[' {
		m, err := parseValid(b)
		if one == nil {
			one = new([1]Message)
		}
		one[0] = m
		return one[:], false, err
	}
	spans := elements(b)
	if len(spans) == 0 {
		return nil, true, fmt.Errorf("parse body: empty batch: %w", ErrInvalidRequest)
	}
	var firstErr error
	for n, span := range spans {
		m, err := parseValid(b[span[0]:span[1]:span[1]])
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("batch element %d: %w", n, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, true, firstErr
}

// envelope holds the raw members of a message object.
type envelope struct {
	version, id, method, params, result, err []byte
}

// parseValid classifies one JSON value known to be valid and trimmed.
func parseValid(b []byte) (Message, error) {
	msg := Message{Raw: b}
	if b[0] != '{' {
		return msg, invalid("not an object")
	}
	env, err := readEnvelope(b)
	if err != nil {
		return msg, fmt.Errorf("parse message: %w", err)
	}
	if isIDType(env.id) {
		msg.ID = env.id
	}
	if !rawStringIs(env.version, "2.0") {
		return msg, invalid(`"jsonrpc" is not "2.0"`)
	}
	if env.method != nil {
		return classifyCall(msg, env)
	}
	return classifyResponse(msg, env)
}

// ReplyID returns the id of a reply: a message object with an "id" and no
// "method" (a request or a notification from the server has one). It walks
// msg once and does not validate it, for a caller whose next step checks
// the JSON anyway; bytes that are not an object report false.
func ReplyID(msg []byte) (json.RawMessage, bool) {
	b := trimWS(msg)
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	env, err := readEnvelope(b)
	if err != nil || env.method != nil || env.id == nil {
		return nil, false
	}
	return env.id, true
}

func readEnvelope(b []byte) (envelope, error) {
	var env envelope
	it := newObjIter(b, 0)
	for m, ok := it.next(); ok; m, ok = it.next() {
		v := b[m.valStart:m.valEnd:m.valEnd]
		key := b[m.keyStart+1 : m.keyEnd-1]
		if m.escaped {
			key = []byte(stringValue(b[m.keyStart:m.keyEnd]))
		}
		switch string(key) {
		case "jsonrpc":
			env.version = v
		case "id":
			env.id = v
		case "method":
			env.method = v
		case "params":
			env.params = v
		case "result":
			env.result = v
		case "error":
			env.err = v
		}
	}
	return env, it.err
}

func classifyCall(msg Message, env envelope) (Message, error) {
	if env.method[0] != '"' {
		return msg, invalid(`"method" is not a string`)
	}
	if env.result != nil || env.err != nil {
		return msg, invalid(`"method" with "result" or "error"`)
	}
	// JSON-RPC 2.0 §4.2 wants params structured; null is tolerated and
	// left for the upstream to judge, since a proxy should not be stricter
	// than the server behind it.
	if p := env.params; p != nil && p[0] != '{' && p[0] != '[' && p[0] != 'n' {
		return msg, invalid(`"params" is not an object or array`)
	}
	if env.id != nil && msg.ID == nil {
		return msg, invalid(`"id" is not a string or number`)
	}
	msg.Kind = KindNotification
	if env.id != nil {
		msg.Kind = KindRequest
	}
	msg.Method = methodName(env.method)
	msg.Params = env.params
	return msg, nil
}

func classifyResponse(msg Message, env envelope) (Message, error) {
	switch {
	case env.result != nil && env.err != nil:
		return msg, invalid(`both "result" and "error"`)
	case env.result != nil:
		if msg.ID == nil {
			return msg, invalid(`response "id" is not a string or number`)
		}
		msg.Kind, msg.Result = KindResponse, env.result
	case env.err != nil:
		// JSON-RPC 2.0 §5: the id is null when it could not be read.
		if msg.ID == nil && !bytes.Equal(env.id, []byte("null")) {
			return msg, invalid(`error "id" is not a string, number or null`)
		}
		if env.err[0] != '{' {
			return msg, invalid(`"error" is not an object`)
		}
		msg.ID, msg.Kind, msg.Error = env.id, KindError, env.err
	default:
		return msg, invalid(`no "method", "result" or "error"`)
	}
	return msg, nil
}

func invalid(reason string) error {
	return fmt.Errorf("parse message: %s: %w", reason, ErrInvalidRequest)
}

// isIDType reports whether raw is a JSON string or number (MCP ids are never
// null, JSON-RPC 2.0 ids never structured).
func isIDType(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// rawStringIs reports whether the JSON string raw decodes to s.
func rawStringIs(raw []byte, s string) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1:len(raw)-1]) == s
	}
	return stringValue(raw) == s
}

// methodName is stringValue for a message's method: MCP's common methods
// come back as constants, where decoding allocates a string per message.
func methodName(raw []byte) string {
	if len(raw) >= 2 {
		// A switch on the converted bytes compares without allocating.
		switch string(raw[1 : len(raw)-1]) {
		case "tools/call":
			return "tools/call"
		case "tools/list":
			return "tools/list"
		case "resources/read":
			return "resources/read"
		case "resources/list":
			return "resources/list"
		case "prompts/get":
			return "prompts/get"
		case "prompts/list":
			return "prompts/list"
		case "initialize":
			return "initialize"
		case "notifications/initialized":
			return "notifications/initialized"
		case "ping":
			return "ping"
		case "server/discover":
			return "server/discover"
		case MethodListen:
			return MethodListen
		}
	}
	return stringValue(raw)
}

// stringValue decodes the valid JSON string raw as encoding/json would,
// turning invalid UTF-8 into U+FFFD.
func stringValue(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // raw is a valid JSON string
	return s
}

// MaxDepth returns how deeply objects and arrays nest in the JSON text b:
// 0 for a scalar, 1 for {} or [1], 2 for {"a":[]}. It does not validate b;
// brackets inside strings do not count.
func MaxDepth(b []byte) int {
	depth, max := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, _, err := skipString(b, i)
			if err != nil {
				return max
			}
			i = end - 1
		case '{', '[':
			if depth++; depth > max {
				max = depth
			}
		case '}', ']':
			depth--
		}
	}
	return max
}

// CheckDepth returns an error wrapping ErrTooDeep when objects and arrays in
// b nest deeper than limit. It is MaxDepth with a verdict.
func CheckDepth(b []byte, limit int) error {
	if d := MaxDepth(b); d > limit {
		return fmt.Errorf("check depth: %d levels, limit %d: %w", d, limit, ErrTooDeep)
	}
	return nil
}
