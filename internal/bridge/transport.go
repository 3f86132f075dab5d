package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// Transport is the era bridge at the edge: an http.RoundTripper in front of
// the sidecar's upstream transport. While the upstream is known to speak
// only the legacy era (Eras), a 2026-07-28 POST is carried on a legacy
// session held for its caller, and the reply is shaped for the modern
// wire; every other request (and every request while the upstream speaks
// 2026-07-28 itself, or its eras are unknown) goes to Next untouched.
//
// What is translated (docs/protocol.md §6):
//   - server/discover is answered from the session's initialize result,
//     once a ping on the session, with the caller's credentials, has a
//     result (the upstream's refusal of it is the caller's);
//   - other requests are sent with the session's Mcp-Session-Id and
//     MCP-Protocol-Version, the per-request _meta era fields removed, and
//     reopened once on 404 (the upstream forgot the session); each held
//     session's GET stream is held open (opened again, resumed with
//     Last-Event-ID, when the upstream ends it: watch) and the server's
//     requests there answered (ping {}, any other -32601), so a server
//     that pings its clients keeps it;
//   - results get resultType, cache fields (ttlMs 0, cacheScope) and
//     serverInfo where absent; -32002 becomes -32602;
//   - notifications/message on a reply stream pass only when the request
//     set a logLevel (the modern wire sends none otherwise);
//   - subscriptions/listen opens its own legacy session and serves its GET
//     stream: the acknowledgement first, then the notifications the filter
//     asked for, each with _meta subscriptionId; resourceSubscriptions are
//     sent as resources/subscribe on that session, and the server's
//     requests on that stream answered (ping {}, any other -32601);
//   - a server-to-client request inside a call becomes an input_required
//     result (mrtr.go): sampling/createMessage, elicitation/create and
//     roots/list inside tools/call, prompts/get or resources/read, when the
//     client declared the capability, are carried in inputRequests with a
//     requestState naming the call, which waits on its held session until
//     the client retries with inputResponses (at most MaxPending calls,
//     each PendingTimeout); the capability undeclared, -32021 with
//     requiredCapabilities; inside another method, -32603
//     server_request_not_bridged; ping is answered {} and any other method
//     -32601 upstream, and the call goes on.
type Transport struct {
	// Next carries every request to the upstream. Required.
	Next http.RoundTripper
	// Eras reports the upstream's eras (Detector.Current). Required.
	Eras func() Eras
	// Credentials are the headers that carry a caller's credentials: they
	// go with the session's initialize and key the sessions.
	Credentials []string
	// CacheScope fills cacheScope where a legacy result lacks it; "" means
	// "private" (the legacy server said nothing about who may share it).
	CacheScope string
	// MaxSessions caps the sessions held, listen streams' included; 0 means
	// DefaultMaxSessions.
	MaxSessions int
	// IdleTimeout closes a session unused this long; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxBytes bounds one reply the bridge parses; 0 means 32 MiB.
	MaxBytes int
	// OnSessions, when set, is told the number of sessions held.
	OnSessions func(int)
	// MaxPending caps the calls waiting for a client's input (MRTR); 0
	// means DefaultMaxPending.
	MaxPending int
	// PendingTimeout is how long such a call waits for the retry; 0 means
	// DefaultPendingTimeout.
	PendingTimeout time.Duration
	// Callers says whose share of the sessions, listens and pending calls
	// a request takes (package caller); nil knows callers by Credentials,
	// else by address.
	Callers *caller.Resolver
	// SharePercent is the part of each of those tables one caller may
	// hold; 0 means caller.DefaultSharePercent.
	SharePercent int
	// Metrics counts refusals by table; nil counts nothing.
	Metrics *metrics.Metrics

	h       *holder
	pending *pendingCalls
	init    atomic.Bool
	hooks   watchHooks       // tests only
	now     func() time.Time // the held sessions' clock; nil is time.Now (tests set it before Start)
}

// Active reports whether the bridge translates modern requests now.
func (t *Transport) Active() bool {
	e := t.Eras()
	return e.Known && e.Legacy && !e.Modern
}

// Start prepares the holder and sweeps idle sessions until ctx ends, when
// it closes them all. Call it once before use.
func (t *Transport) Start(ctx context.Context) {
	maxSessions, idle := t.MaxSessions, t.IdleTimeout
	if maxSessions <= 0 {
		maxSessions = DefaultMaxSessions
	}
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	if t.Callers == nil {
		t.Callers = &caller.Resolver{Credentials: onbehalf.Credentials(t.Credentials)}
	}
	table := func(name string, capacity int, retry time.Duration) *caller.Table {
		return caller.NewTable(caller.TableOptions{Name: name, Cap: capacity, SharePercent: t.SharePercent, RetryAfter: retry, Metrics: t.Metrics})
	}
	if t.now == nil {
		t.now = time.Now
	}
	t.h = &holder{sessions: table(tableSessions, maxSessions, 0), listens: table(tableListens, max(maxSessions/2, 1), 0),
		idle: idle, now: t.now, closed: t.endSession, count: t.OnSessions}
	maxPending := t.MaxPending
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	t.pending = &pendingCalls{timeout: t.PendingTimeout,
		expired: func(c *upcall) { t.release(c, "the client did not answer in time") }}
	if t.pending.timeout <= 0 {
		t.pending.timeout = DefaultPendingTimeout
	}
	t.pending.places = table(tablePending, maxPending, 0)
	go func() {
		tick := time.NewTicker(idle / 4)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				for _, c := range t.pending.drain() {
					t.release(c, "the sidecar is shutting down")
				}
				t.h.closeAll()
				return
			case <-tick.C:
				t.h.sweep()
			}
		}
	}()
}

func (t *Transport) maxBytes() int {
	if t.MaxBytes <= 0 {
		return 32 << 20
	}
	return t.MaxBytes
}

func (t *Transport) scope() string {
	if t.CacheScope == "" {
		return "private"
	}
	return t.CacheScope
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || t.h == nil || !t.Active() {
		return t.Next.RoundTrip(req)
	}
	msg, ok, err := requestMessage(req)
	if err != nil {
		return nil, err
	}
	if !ok || (msg.Kind != rewrite.KindRequest && msg.Kind != rewrite.KindNotification) || !wire.ClaimsModern(req.Header, msg.Params) {
		return t.Next.RoundTrip(req)
	}
	resp, err := t.bridge(req, msg)
	if resp != nil {
		seal(resp.Header)
	}
	return resp, err
}

// seal removes from the headers of a reply to a modern caller what
// belongs to the legacy session the bridge holds, which the caller never
// sees nor could use: its Mcp-Session-Id, and the upstream's
// Access-Control-* (whose exposure names that session's headers). The
// event ids of its streams are dropped as they pass (pumpReply).
func seal(h http.Header) {
	for k := range h {
		if k == "Mcp-Session-Id" || strings.HasPrefix(k, "Access-Control-") {
			delete(h, k)
		}
	}
}

// requestMessage returns the message of a POST's body, and whether it is
// one: the message the proxy parsed already when it sent the body
// (rewrite.Parsed), or else the body's bytes parsed, the body left
// readable again. err is a failure to read the body.
func requestMessage(req *http.Request) (m rewrite.Message, ok bool, err error) {
	if m, ok := rewrite.MessageOf(req.Body); ok {
		return m, true, nil
	}
	body, err := requestBody(req)
	if err != nil {
		return rewrite.Message{}, false, err
	}
	m, perr := rewrite.ParseMessage(body)
	return m, perr == nil, nil
}

// requestBody returns the request's body and leaves it readable again.
// A body that holds its bytes in memory (the proxy's, hop.MemBytes) is
// looked at where it lies: neither read nor copied.
func requestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if b, ok := hop.MemBytes(req); ok {
		return b, nil
	}
	var rc io.ReadCloser = req.Body
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			rc = b
		}
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

// rebuilt returns req made under ctx to send body in place of its own:
// its header a copy to edit, its URL shared (nothing below modifies a
// request's URL), its body in memory (hop.SetBody; the edits the bridge
// makes after touch neither the URL nor Upgrade). Every request the era
// bridge sends on a caller's behalf from the caller's own is made so.
func rebuilt(ctx context.Context, req *http.Request, body []byte) *http.Request {
	out := req.WithContext(ctx)
	out.Header = req.Header.Clone()
	hop.SetBody(out, new(hop.MemBody), body)
	return out
}

func (t *Transport) bridge(req *http.Request, msg rewrite.Message) (*http.Response, error) {
	if r := CheckModern(req.Header, msg); r != nil {
		return nil, refuse(r.Status, r.Code, r.Message, r.Data)
	}
	caps, _ := rewrite.GetKey(msg.Params, []string{"_meta", metaClientCaps})
	var compact bytes.Buffer
	if json.Compact(&compact, caps) != nil {
		return nil, refuse(http.StatusBadRequest, reply.CodeInvalidParams, metaClientCaps+" must be an object", nil)
	}
	caps = compact.Bytes()
	if msg.Method == "subscriptions/listen" && msg.Kind == rewrite.KindRequest {
		return t.listen(req, msg, caps)
	}
	key := sessionKey(req.Header, t.Credentials, caps)
	who := t.Callers.Of(req)
	s := t.h.get(key, who, func(s *session) { t.open(req, s, msg, caps) })
	defer func() { s.release() }() // the session this request ends on (sessions.go: get)
	if err := sessionFailure(s); err != nil {
		return nil, err
	}
	// reopen ends the exchange resp on s, which the upstream forgot (404
	// on a request of the session: it restarted, or expired it), and
	// puts another session in its place, once per request.
	reopen := func(resp *http.Response, cc *callCtx) error {
		drain(resp)
		cc.end()
		t.h.drop(s)
		s.release()
		s = t.h.get(key, who, func(s *session) { t.open(req, s, msg, caps) })
		return sessionFailure(s)
	}
	if msg.Method == "server/discover" && msg.Kind == rewrite.KindRequest {
		// Answered from the session's initialize result, once the
		// upstream has answered a ping on it with the caller's
		// credentials: the session is held for as long as it is used, and
		// server/discover is the auth gate's probe of a modern caller, so
		// the upstream judges the credentials each time, as it judges a
		// forwarded call's. Its refusal passes as it sent it.
		for retried := false; ; retried = true {
			upID := upstreamID()
			ping := append(append([]byte(`{"jsonrpc":"2.0","id":`), upID...), `,"method":"ping"}`...)
			resp, cc, err := t.send(req, s, ping, upID)
			if err != nil {
				return nil, err
			}
			if resp.StatusCode == http.StatusNotFound && s.id != "" && !retried {
				if err := reopen(resp, cc); err != nil {
					return nil, err
				}
				continue
			}
			if resp.StatusCode != http.StatusOK {
				return passBody(resp, cc), nil
			}
			m, err := onbehalf.ReadReply(resp.Header.Get("Content-Type"), resp.Body, upID, t.maxBytes())
			drain(resp)
			cc.end()
			if err != nil || m.Kind != rewrite.KindResponse {
				return nil, failed(badGateway, "era bridge: the upstream did not answer a ping on the session", "bridge_session_failed", err)
			}
			return nil, answered(Discover(s.init, t.Eras().Versions, t.scope()))
		}
	}
	if state, ok := rewrite.GetString(msg.Params, "requestState"); ok && msg.Kind == rewrite.KindRequest && slices.Contains(mrtrMethods, msg.Method) {
		return t.resume(req, msg, key, state)
	}
	legacy, err := LegacyRequest(msg)
	var upID json.RawMessage // the id the request goes upstream with (call.go)
	if err == nil && msg.Kind == rewrite.KindRequest {
		upID = upstreamID()
		legacy, err = rewrite.SetKey(legacy, []string{"id"}, upID)
	}
	if err != nil {
		// The client's own params could not be made legacy (a _meta
		// that is not an object): its fault, and nothing to log.
		return nil, refuse(http.StatusBadRequest, reply.CodeInvalidParams, "invalid params: _meta must be an object", nil)
	}
	resp, cc, err := t.send(req, s, legacy, upID)
	if err == nil && resp.StatusCode == http.StatusNotFound && s.id != "" {
		if err := reopen(resp, cc); err != nil {
			return nil, err
		}
		resp, cc, err = t.send(req, s, legacy, upID)
	}
	if err != nil {
		return nil, err
	}
	if msg.Kind != rewrite.KindRequest {
		return passBody(resp, cc), nil
	}
	_, logs := rewrite.GetKey(msg.Params, []string{"_meta", metaLogLevel})
	return t.translate(resp, &upcall{body: resp.Body, s: s, key: key, who: who, method: msg.Method, id: upID, caps: caps, logs: logs, call: cc}, msg)
}

// sessionFailure is the error for a session that could not be opened:
// the upstream's own refusal (401 with its WWW-Authenticate, …, an
// *onbehalf.Refusal the proxy passes on with the caller's id) or a
// caller's refusal (429 over its share, 503 with the table full and every
// session that could make room busy); or, when the upstream could not be
// asked or its answer was unreadable, a failure (502
// bridge_session_failed, the cause for the log only).
func sessionFailure(s *session) error {
	var full *caller.Refusal
	switch {
	case errors.As(s.err, &full):
		return &failure{reply: full.Reply()}
	case s.deny != nil:
		return s.deny
	case s.err != nil:
		return failed(badGateway, "era bridge: cannot open a legacy session", "bridge_session_failed", s.err)
	}
	return nil
}

// bridgeClientInfo names the sidecar when the caller sent no clientInfo.
var bridgeClientInfo = json.RawMessage(`{"name":"skills-sidecar-era-bridge","version":"1"}`)

// open sends the session's initialize, with the caller's credentials,
// clientInfo and capabilities, then notifications/initialized. It does not
// run under the caller's context: other callers of the same key wait for
// it, and one caller leaving must not fail them.
func (t *Transport) open(req *http.Request, s *session, msg rewrite.Message, caps json.RawMessage) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()), 30*time.Second)
	defer cancel()
	info, ok := rewrite.GetKey(msg.Params, []string{"_meta", metaClientInfo})
	if !ok {
		info = bridgeClientInfo
	}
	s.version = t.Eras().LegacyVersion("2025-11-25")
	s.url, s.creds = req.URL.String(), onbehalf.CallerHeaders(req.Header, t.Credentials)
	// The caller's capabilities and clientInfo go as it spelled them.
	r, id, err := s.held().Initialize(ctx, s.version, caps, info)
	resp, err := t.do(r, err)
	if err != nil {
		s.err = err
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Any refusal (401 with an OAuth JSON body, a JSON-RPC error at
		// 4xx, text) is the caller's, with its status and
		// WWW-Authenticate, so the client's auth flow starts; nothing
		// else of the held session's reply is the caller's.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		h := http.Header{}
		if v, ok := resp.Header["Www-Authenticate"]; ok {
			h["Www-Authenticate"] = v
		}
		s.deny = &onbehalf.Refusal{Status: resp.StatusCode, Header: h, Body: b}
		return
	}
	// Only the reply carrying the initialize's own id answers it.
	m, err := onbehalf.ReadReply(resp.Header.Get("Content-Type"), resp.Body, id, t.maxBytes())
	switch {
	case err != nil:
		s.err = fmt.Errorf("upstream initialize reply: %w", err)
		return
	case m.Kind != rewrite.KindResponse:
		s.err = fmt.Errorf("upstream refused initialize: %s", bytes.TrimSpace(m.Error))
		return
	}
	if err := readInitResult(m.Result, &s.init); err != nil {
		s.err = fmt.Errorf("upstream initialize result: %w", err)
		return
	}
	if s.init.ProtocolVersion != "" {
		s.version = s.init.ProtocolVersion
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	if r, err := t.do(s.held().Initialized(ctx)); err == nil {
		drain(r)
	}
	if !s.pinned {
		t.watch(s)
	}
}

// held is s as package onbehalf builds the requests on it: where it
// lives, the headers of the caller it was opened for (its credentials,
// trace, user agent, network identity), its id and version.
func (s *session) held() onbehalf.Held {
	return onbehalf.Held{URL: s.url, Caller: s.creds, ID: s.id, Version: s.version}
}

// postOn sends body on the held session s, with the caller headers it was
// opened with (not any one caller's: the bridge's own messages on it).
func (t *Transport) postOn(ctx context.Context, s *session, body []byte) (*http.Response, error) {
	return t.do(s.held().Post(ctx, body))
}

// do sends req, built by package onbehalf (the one builder of requests
// made for callers), to the upstream.
func (t *Transport) do(req *http.Request, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	return t.Next.RoundTrip(req)
}

// send forwards the caller's request, made legacy (and given the upstream
// id id; nil for a notification), on s: the caller's own headers
// (X-Forwarded-*, …) less the modern-only ones, with the session's. It
// runs under a context of its own (call.go), which the caller's leaving
// cancels until the call is detached.
func (t *Transport) send(req *http.Request, s *session, body []byte, id json.RawMessage) (*http.Response, *callCtx, error) {
	cc := newCall(req.Context(), s, id, t.cancelUpstream)
	out := rebuilt(cc.ctx, req, body)
	out.Header.Del("Mcp-Method")
	out.Header.Del("Mcp-Name")
	out.Header.Del("Content-Length")
	out.Header.Del("Accept-Encoding") // the reply is parsed to be translated
	if s.id != "" {
		out.Header.Set("Mcp-Session-Id", s.id)
	} else {
		out.Header.Del("Mcp-Session-Id")
	}
	out.Header.Set("Mcp-Protocol-Version", s.version)
	resp, err := t.Next.RoundTrip(out)
	if err != nil {
		cc.end()
		return nil, nil, err
	}
	return resp, cc, nil
}

// passBody hands resp to the caller as the upstream sent it: the upstream
// has answered, so the caller's leaving cancels nothing more, and the call
// ends when the body is closed.
func passBody(resp *http.Response, cc *callCtx) *http.Response {
	cc.detach()
	resp.Body = &endingBody{ReadCloser: resp.Body, end: cc.end}
	return resp
}

// endingBody is a reply body that ends its call when closed: the call
// first (its session idle again), then the body the upstream sees closed.
type endingBody struct {
	io.ReadCloser
	end func()
}

func (b *endingBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

// endSession ends a dropped session on the upstream with DELETE.
func (t *Transport) endSession(s *session) {
	if s.unwatch != nil {
		s.unwatch()
	}
	if s.id == "" || s.url == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := t.do(s.held().End(ctx)); err == nil {
		drain(resp)
	}
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
