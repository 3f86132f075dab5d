package bridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Multi round-trip requests (2026-07-28 basic/patterns/mrtr): a legacy
// server asks the client for sampling, elicitation or roots with a request
// on the reply stream of a call; the modern wire has no such requests, and
// carries them instead as an InputRequiredResult the client answers by
// retrying the call with inputResponses and requestState. The bridge keeps
// the legacy call waiting on its held session meanwhile: the pending call
// is keyed by a random requestState and bound to the caller (its
// credentials and capabilities), the method and the call's params.

// Defaults of the calls kept waiting for a client's retry.
const (
	// DefaultMaxPending caps the calls waiting for a retry at once (the
	// table bridge_pending, of which one caller holds at most its share);
	// past it, a server request ends its call with -32603
	// (bridge_pending_exhausted, or caller_share_exhausted).
	DefaultMaxPending = 64
	// DefaultPendingTimeout is how long a call waits for its retry; then
	// the server's requests are answered with an error and the call is
	// released. It is below DefaultIdleTimeout, so the session outlives it.
	DefaultPendingTimeout = 2 * time.Minute
)

// mrtrMethods are the requests whose result may be input_required
// (2026-07-28: "Servers MUST NOT send InputRequiredResult responses on any
// other client requests").
var mrtrMethods = []string{"tools/call", "prompts/get", "resources/read"}

// inputMethods are the server-to-client requests an InputRequests map can
// carry (the schema's InputRequest).
var inputMethods = []string{"sampling/createMessage", "elicitation/create", "roots/list"}

// upcall is a legacy call in flight on a held session: its reply stream,
// and what a retry must match to continue it.
type upcall struct {
	r      *rewrite.Reader
	body   io.Closer
	s      *session
	key    string          // the caller's session key (credentials, capabilities)
	who    caller.ID       // whose share of the pending calls it takes
	method string          // the client's method
	digest [32]byte        // of its params, MRTR fields and _meta aside
	id     json.RawMessage // the id the upstream answers to (upstreamID)
	caps   json.RawMessage // the client's capabilities
	logs   bool
	call   *callCtx // its upstream request's context and client watch
	// asked are the server's requests waiting for the client's answers.
	asked []asked
	// resumed is set once a retry continues the call.
	resumed bool
}

// close ends the call: no longer in flight, its context cancelled, its
// reply stream closed. The session is idle again before the upstream can
// see the call end: whoever learns of the end (the upstream, and a caller
// it answers) finds the session free.
func (c *upcall) close() {
	c.call.end()
	c.body.Close()
}

// asked is one server-to-client request carried to the client.
type asked struct {
	key    string          // its key in inputRequests
	id     json.RawMessage // the upstream's request id
	method string
	params json.RawMessage
}

// callDigest hashes params without _meta, inputResponses and requestState,
// decoded and re-encoded (only to compare: nothing is sent from it), so a
// retry matches whatever the client's encoder's key order.
func callDigest(params json.RawMessage) [32]byte {
	p := []byte(params)
	for _, k := range []string{"_meta", "inputResponses", "requestState"} {
		if len(p) > 0 {
			if out, _, err := rewrite.DeleteKey(p, []string{k}); err == nil {
				p = out
			}
		}
	}
	var v any
	if json.Unmarshal(p, &v) == nil {
		p, _ = json.Marshal(v)
	}
	return sha256.Sum256(p)
}

// pendingCalls holds the calls waiting for a retry: each holds a place of
// places from add until it leaves for good (continued, expired, drained).
type pendingCalls struct {
	places  *caller.Table
	timeout time.Duration
	expired func(*upcall)

	mu sync.Mutex
	m  map[string]*upcall
	// due is when each call expires; a call a retry took and put back
	// keeps its deadline.
	due map[string]time.Time
}

// hold and release count c's waiting on its session, which eviction
// spares while any wait (see holder.evictLRULocked).
func hold(c *upcall) {
	if c.s != nil {
		c.s.waiting.Add(1)
	}
}

func release(c *upcall) {
	if c.s != nil {
		c.s.waiting.Add(-1)
	}
}

// add keeps c until its retry or the timeout and returns its token, or
// the *caller.Refusal of a place for c's caller.
func (p *pendingCalls) add(c *upcall) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m, p.due = map[string]*upcall{}, map[string]time.Time{}
	}
	if err := p.places.Acquire(c.who, nil); err != nil {
		return "", err
	}
	p.m[token], p.due[token] = c, time.Now().Add(p.timeout)
	hold(c)
	p.expireAt(token, p.timeout)
	return token, nil
}

// expireAt ends the call token names after d unless a retry has taken it
// by then; a retry that puts it back re-arms it (see put).
func (p *pendingCalls) expireAt(token string, d time.Duration) {
	time.AfterFunc(d, func() {
		if c := p.remove(token); c != nil {
			p.expired(c)
		}
	})
}

// take removes and returns the call token names when it is the caller's
// (key), of method and of the same params; nil otherwise, and then the
// call stays, for its own caller's retry.
func (p *pendingCalls) take(token, key, method string, digest [32]byte) *upcall {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.m[token]
	if c == nil || c.key != key || c.method != method || c.digest != digest {
		return nil
	}
	delete(p.m, token)
	release(c)
	return c
}

// remove takes the call token names out for good (its deadline passed).
func (p *pendingCalls) remove(token string) *upcall {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.m[token]
	if c == nil {
		return nil
	}
	if time.Now().Before(p.due[token]) {
		return nil // put back by a retry after an earlier timer: its own timer ends it
	}
	delete(p.m, token)
	delete(p.due, token)
	release(c)
	p.places.Release(c.who)
	return c
}

// put returns a call taken by a retry that could not continue it, with the
// deadline it had: a timer that fired while the retry held it ended
// nothing, so put arms one for what is left (or ends the call at once).
func (p *pendingCalls) put(token string, c *upcall) {
	p.mu.Lock()
	left := time.Until(p.due[token])
	if left <= 0 {
		delete(p.due, token)
		p.places.Release(c.who)
		p.mu.Unlock()
		p.expired(c)
		return
	}
	p.m[token] = c
	hold(c)
	p.mu.Unlock()
	p.expireAt(token, left)
}

// forget drops the deadline of a call a retry took for good (it is not
// put back): take leaves it for put, and nothing else would remove it.
func (p *pendingCalls) forget(token string, c *upcall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.due, token)
	p.places.Release(c.who)
}

// drain removes and returns every pending call (shutdown).
func (p *pendingCalls) drain() []*upcall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*upcall
	for k, c := range p.m {
		delete(p.m, k)
		delete(p.due, k)
		release(c)
		p.places.Release(c.who)
		out = append(out, c)
	}
	return out
}

func (p *pendingCalls) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// requiredCapability returns the client capability a server request needs
// ({"sampling":{}}, {"elicitation":{"url":{}}}, …) when caps lacks it, or
// nil when the client declared it.
func requiredCapability(method string, params, caps json.RawMessage) json.RawMessage {
	has := func(path ...string) bool {
		v, ok := rewrite.GetKey(caps, path)
		return ok && len(v) > 0 && v[0] == '{'
	}
	switch method {
	case "sampling/createMessage":
		if !has("sampling") {
			return json.RawMessage(`{"sampling":{}}`)
		}
		if _, ok := rewrite.GetKey(params, []string{"tools"}); ok && !has("sampling", "tools") {
			return json.RawMessage(`{"sampling":{"tools":{}}}`)
		}
		if ic, _ := rewrite.GetString(params, "includeContext"); (ic == "thisServer" || ic == "allServers") && !has("sampling", "context") {
			return json.RawMessage(`{"sampling":{"context":{}}}`)
		}
	case "elicitation/create":
		if !has("elicitation") {
			return json.RawMessage(`{"elicitation":{}}`)
		}
		if mode, _ := rewrite.GetString(params, "mode"); mode == "url" {
			if !has("elicitation", "url") {
				return json.RawMessage(`{"elicitation":{"url":{}}}`)
			}
		} else if !has("elicitation", "form") && has("elicitation", "url") {
			// {} alone means form; url alone means not form.
			return json.RawMessage(`{"elicitation":{"form":{}}}`)
		}
	case "roots/list":
		if !has("roots") {
			return json.RawMessage(`{"roots":{}}`)
		}
	}
	return nil
}

// inputKey is the inputRequests key of the upstream's request id: its
// string, or its number's text.
func inputKey(id json.RawMessage) string {
	if s, ok := rewrite.StringBytes(id); ok {
		return string(s)
	}
	return string(id)
}

// inputRequired is the InputRequiredResult carrying the asked requests,
// each {"method", "params"} with the server's params as it sent them.
func inputRequired(token string, asks []asked) json.RawMessage {
	out := []byte(`{"resultType":"input_required","inputRequests":{`)
	for i, a := range asks {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(out, marshal(a.key)...), `:{"method":`...)
		out = append(out, marshal(a.method)...)
		if len(a.params) > 0 {
			out = append(append(out, `,"params":`...), a.params...)
		}
		out = append(out, '}')
	}
	out = append(append(out, `},"requestState":`...), marshal(token)...)
	return append(out, '}')
}

// answerUpstream posts a JSON-RPC response (result or error) to a server
// request on s.
func (t *Transport) answerUpstream(s *session, body []byte) error {
	if s.url == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := t.postOn(ctx, s, body)
	if err != nil {
		return err
	}
	drain(resp)
	if resp.StatusCode/100 != 2 {
		return &statusError{resp.StatusCode}
	}
	return nil
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "upstream answered " + strconv.Itoa(e.code) }

// release ends a pending call nobody will continue: its server requests
// are answered with an error, so the server does not wait on, and the
// stream is closed.
func (t *Transport) release(c *upcall, why string) {
	for _, a := range c.asked {
		_ = t.answerUpstream(c.s, reply.ErrorMessage(a.id, &reply.Error{Code: reply.CodeInternalError, Message: why}))
	}
	c.close()
}

// answerItself answers upstream a server request m on s that no client
// is asked: ping with {} (2025-11-25 basic/utilities/ping: the receiver
// MUST respond promptly), anything else with -32601.
func (t *Transport) answerItself(s *session, m rewrite.Message) {
	if m.Method == "ping" {
		_ = t.answerUpstream(s, reply.ResultMessage(m.ID, emptyResult))
		return
	}
	_ = t.answerUpstream(s, reply.ErrorMessage(m.ID, &reply.Error{Code: reply.CodeMethodNotFound, Message: "the client does not offer " + m.Method}))
}

// serverRequest decides what becomes of a server-to-client request m on
// c's stream. It returns the event to write to the client, whether the
// client's stream ends with it, and whether the call now waits for a
// retry (then its upstream stream is the retry's to read, and closed only
// by it or the timeout); no event means the request was answered upstream
// and the stream goes on.
func (t *Transport) serverRequest(c *upcall, clientID json.RawMessage, m rewrite.Message) (event []byte, end, pending bool) {
	switch {
	case m.Method == "ping" || !slices.Contains(inputMethods, m.Method):
		t.answerItself(c.s, m)
		return nil, false, false
	case !slices.Contains(mrtrMethods, c.method):
		t.release(&upcall{s: c.s, body: c.body, asked: []asked{{id: m.ID}}}, "the client cannot answer "+m.Method+" inside "+c.method)
		return reply.ErrorMessage(clientID, &reply.Error{Code: reply.CodeInternalError,
			Message: "the server asked the client for " + m.Method + " inside " + c.method + ", which the 2026-07-28 wire cannot carry (input_required is defined for tools/call, prompts/get and resources/read only)",
			Data:    map[string]string{"reason": "server_request_not_bridged", "method": m.Method}}), true, false
	}
	if need := requiredCapability(m.Method, m.Params, c.caps); need != nil {
		t.release(&upcall{s: c.s, body: c.body, asked: []asked{{id: m.ID}}}, "the client did not declare the capability "+m.Method+" needs")
		return reply.ErrorMessage(clientID, &reply.Error{Code: reply.CodeMissingClientCapability, Message: "the server requires a client capability for " + m.Method + " that the request's clientCapabilities lack",
			Data: map[string]json.RawMessage{"requiredCapabilities": need}}), true, false
	}
	c.asked = []asked{{key: inputKey(m.ID), id: m.ID, method: m.Method, params: m.Params}}
	c.s.touch(time.Now())
	if !c.call.detach() {
		// The client left as the server asked: its cancellation is under
		// way (call.go), and nobody will retry.
		t.release(c, "the client left")
		return nil, true, false
	}
	token, err := t.pending.add(c)
	if err != nil {
		// On a reply stream already under way: the refusal is its last
		// event, at the status the stream has (no 429 or Retry-After).
		t.release(c, "too many calls wait for their clients")
		e := err.(*caller.Refusal).Reply()
		return reply.ErrorMessage(clientID, e), true, false
	}
	return reply.ResultMessage(clientID, inputRequired(token, c.asked)), true, true
}

// resume continues the pending call a retry names with its requestState:
// the retry's inputResponses answer the server's requests on the held
// session, and the rest of the call's reply stream is the retry's reply.
func (t *Transport) resume(req *http.Request, msg rewrite.Message, key string, state string) (*http.Response, error) {
	c := t.pending.take(state, key, msg.Method, callDigest(msg.Params))
	if c == nil {
		// Unknown, expired, another caller's or another call's: the same
		// answer for all, and someone else's pending call is not touched.
		return nil, refuse(http.StatusBadRequest, reply.CodeInvalidParams,
			"requestState does not name a call of this caller waiting for input (unknown, expired, or for other params)",
			map[string]string{"reason": "bridge_request_state_unknown"})
	}
	responses, ok := rewrite.GetKey(msg.Params, []string{"inputResponses"})
	if ok && (len(responses) == 0 || responses[0] != '{') {
		t.pending.put(state, c)
		return nil, refuse(http.StatusBadRequest, reply.CodeInvalidParams, "inputResponses must be an object", nil)
	}
	var missing []asked
	answers := make([][]byte, len(c.asked))
	for i, a := range c.asked {
		v, ok := rewrite.GetKey(responses, []string{a.key})
		if !ok || len(v) == 0 || v[0] != '{' {
			missing = append(missing, a)
			continue
		}
		answers[i] = reply.ResultMessage(a.id, v)
	}
	if len(missing) > 0 {
		// The spec: ask again for what is missing rather than fail.
		t.pending.put(state, c)
		return nil, answered(inputRequired(state, missing))
	}
	t.pending.forget(state, c) // taken for good: the call goes on, or ends, here
	for _, b := range answers {
		if err := t.answerUpstream(c.s, b); err != nil {
			c.close()
			return nil, failed(badGateway, "era bridge: the upstream did not take the client's input", "bridge_input_not_delivered", err)
		}
	}
	c.asked, c.resumed = nil, true
	c.call.follow(req.Context()) // the retry's client leaving now cancels the call
	pr, pw := io.Pipe()
	go t.pumpReply(nil, pw, c, msg.ID)
	return nil, &reply.Answer{Events: pr}
}

// withID returns the upstream's body with the client's id when the two
// differ (a retry's body carries the retry's id).
func withID(body []byte, upstream, client json.RawMessage) []byte {
	if bytes.Equal(upstream, client) {
		return body
	}
	if out, err := rewrite.SetKey(body, []string{"id"}, client); err == nil {
		return out
	}
	return body
}
