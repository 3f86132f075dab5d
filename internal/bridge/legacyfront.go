package bridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
	"github.com/skills-sidecar/skills-sidecar/internal/slotctx"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// Defaults of the legacy front.
const (
	// DefaultFrontLifetime is how long a minted session lasts from its
	// initialize, whatever its use: the id carries its expiry, so no
	// replica needs to remember the session to end it. A legacy client
	// meets the end as a 404 and initializes again (2025-11-25 Streamable
	// HTTP, session management).
	DefaultFrontLifetime = 24 * time.Hour
	// DefaultMaxFrontSessions caps the minted sessions that hold state on
	// this replica at once: a log level set, subscriptions, GET streams.
	// Minting and serving a session's requests hold nothing.
	DefaultMaxFrontSessions = 4096
	// DefaultFrontIdle is how long a session's state on this replica lives
	// unused (a GET stream open on it counts as use).
	DefaultFrontIdle = 30 * time.Minute
	// DefaultMaxFrontRevoked caps the ids ended by DELETE that this
	// replica remembers until they expire; past it an id DELETE ends still
	// opens until its expiry.
	DefaultMaxFrontRevoked = 65536
	// DefaultMaxFrontStreams caps the GET streams served at once, each an
	// open subscriptions/listen to the upstream.
	DefaultMaxFrontStreams = 256
	// DefaultMaxFrontSessionStreams caps the GET streams of one session,
	// so that one client cannot take every stream the front serves (as
	// the sidecar's own notification streams are capped per session).
	DefaultMaxFrontSessionStreams = 8
	// DefaultMaxFrontSubscriptions caps the resources/subscribe one
	// minted session keeps on this replica (as the notification hub caps
	// a session's).
	DefaultMaxFrontSubscriptions = 256
	// DefaultMaxFrontSubscriptionsAll caps them over every minted
	// session's state here (the table bridge_subscriptions, shared per
	// caller): with MaxSubscriptionURI, at most 32 MiB of URIs held.
	DefaultMaxFrontSubscriptionsAll = 4096
	// MaxSubscriptionURI bounds a subscribed URI, in bytes: a
	// subscription is kept for as long as its session's state, so its
	// size is memory held for that long. The notification hub's bound,
	// so a URI is refused alike wherever the sidecar keeps it.
	MaxSubscriptionURI = notify.MaxSubscriptionURI
)

// LegacyFront is the other half of the era bridge: while
// the upstream is known to speak only the 2026-07-28 era, it serves legacy
// (initialize-era) clients in front of it. It is an http.RoundTripper in
// front of Next (the bridge's Transport, which passes everything through
// to such an upstream); every request of the modern era, and every request
// while the upstream speaks the legacy era itself or its eras are unknown,
// goes to Next untouched.
//
// What it does (docs/protocol.md §6, read backwards):
//   - initialize is answered by the front from the upstream's
//     server/discover, asked on the caller's behalf (onbehalf) with the
//     caller's credentials, capabilities and clientInfo: serverInfo,
//     capabilities (the proxy splices the sidecar's declaration into them
//     as into any initialize reply), instructions, and the protocol version
//     negotiated by the legacy rule among BridgedLegacyVersions;
//   - it mints the session: what initialize fixed (the negotiated
//     version, the client's capabilities and clientInfo) and an absolute
//     expiry, sealed into the id (package sessionid) under Keys, bound to
//     a hash of the caller's credential headers, so any replica holding
//     the key serves it, and an id presented with other credentials, or
//     tampered with, or expired, is unknown (404) as an id never minted is;
//   - notifications/initialized (and every other client notification: the
//     modern wire defines none over HTTP) is accepted with 202; ping is
//     answered {} once the upstream's server/discover, asked with the
//     caller's credentials, has a result (the modern wire has no ping; the
//     upstream judges the credentials of every request, the auth gate's
//     probe included); logging/setLevel is kept and sent as _meta logLevel on the
//     session's later requests; resources/subscribe and unsubscribe are
//     kept and become the resourceSubscriptions of its GET stream's listen;
//     DELETE ends the session's state here and revokes its id on this
//     replica until it expires (other replicas still open it);
//   - a key dropped from Keys ends here, at once with KeysChanged, every
//     session it sealed: its GET streams, its state, its requests under way
//     (their ids open no more: the client's next request is 404);
//   - every other request of the session is sent with the per-request
//     _meta (protocolVersion 2026-07-28, the session's clientCapabilities
//     and clientInfo) and the modern headers (MCP-Protocol-Version,
//     Mcp-Method, Mcp-Name), its Mcp-Session-Id removed, and the reply
//     translated back by LegacyReply; a JSON-RPC error the modern wire
//     sends with 400 or 404 travels with 200, since a legacy client reads
//     404 as "session gone";
//   - a GET with the session's id is served from a subscriptions/listen
//     POST (every list_changed kind, the session's subscriptions), the
//     acknowledgement dropped; a change of subscriptions reopens it.
//
// What changes after initialize (the log level, subscriptions, GET
// streams, calls under way) stays with the replica that received it
// (frontLocal); everything else travels in the id.
//
// Not carried: batches (2025-03-26 allowed them; they go to the upstream,
// which refuses them), Last-Event-ID resumption (the modern wire has none),
// and input_required results (see LegacyReply).
type LegacyFront struct {
	// Next carries every request to the upstream. Required.
	Next http.RoundTripper
	// Eras reports the upstream's eras (Detector.Current). Required.
	Eras func() Eras
	// Upstream is the upstream MCP endpoint. Required.
	Upstream *url.URL
	// Credentials are the headers that carry a caller's credentials; nil
	// means onbehalf.DefaultCredentials.
	Credentials []string
	// Keys returns the keys that seal and open the ids the front mints;
	// nil means one random key of this process, made at Start, so that
	// sessions open on this replica only.
	Keys func() *sessionid.Keys
	// KeysChanged, when set, returns a channel closed when Keys changes
	// (sessionkeys.Source.Changed): the front then ends at once, on this
	// replica, every session whose key is gone (its GET streams, its
	// state, its requests under way). Without it, the next sweep does.
	KeysChanged func() <-chan struct{}
	// Lifetime is how long a minted session lasts; 0 means
	// DefaultFrontLifetime.
	Lifetime time.Duration
	// MaxSessions, IdleTimeout, MaxStreams, MaxSessionStreams and
	// MaxRevoked bound the front; 0 means DefaultMaxFrontSessions,
	// DefaultFrontIdle, DefaultMaxFrontStreams,
	// DefaultMaxFrontSessionStreams, DefaultMaxFrontRevoked.
	MaxSessions       int
	IdleTimeout       time.Duration
	MaxStreams        int
	MaxSessionStreams int
	MaxRevoked        int
	// MaxSubscriptions caps the resources/subscribe kept over every
	// session's state here; 0 means DefaultMaxFrontSubscriptionsAll.
	MaxSubscriptions int
	// MaxBytes bounds one reply the front parses; 0 means 32 MiB.
	MaxBytes int
	// OnSessions, when set, is told the number of minted sessions that
	// hold state on this replica.
	OnSessions func(int)
	// Callers says whose share of the front's tables a request takes
	// (package caller); nil knows callers by Credentials, else by address.
	Callers *caller.Resolver
	// SharePercent is the part of each of those tables one caller may
	// hold; 0 means caller.DefaultSharePercent.
	SharePercent int
	// Metrics counts refusals by table; nil counts nothing.
	Metrics *metrics.Metrics

	call *onbehalf.Upstream
	now  func() time.Time

	// places, streams, subs and revocations count what each caller holds
	// of the sessions with state here, the GET streams, the subscriptions
	// and the revoked ids.
	places, streams, subs, revocations *caller.Table

	mu       sync.Mutex
	sessions map[mintedKey]*frontLocal
	revoked  map[mintedKey]revocation // ids DELETE ended here, until they expire
	// calls are the sessions' requests under way upstream, by session and
	// the request id's JSON, each with what cancels it: a legacy client
	// cancels with notifications/cancelled, the modern wire by closing the
	// stream.
	calls map[callKey]*frontCall
}

// mintedKey names a minted session in this replica's tables: the SHA-256
// of its id (an id is up to sessionid.MaxLen characters).
type mintedKey [sha256.Size]byte

type callKey struct {
	session mintedKey
	id      string
}

// frontSession is a minted session as its id carries it, opened for one
// request.
type frontSession struct {
	key     mintedKey
	version string          // the negotiated legacy version
	caps    json.RawMessage // its initialize's capabilities and clientInfo
	info    json.RawMessage
	expires time.Time
	sealed  sessionid.KeyRef // the key that opened its id
}

// frontLocal is what a session changed after initialize on this replica:
// it stays here (a request of the session that reaches another replica
// does not see it).
type frontLocal struct {
	owner   caller.ID // whose places of bridge_sessions and bridge_subscriptions it takes
	expires time.Time
	sealed  sessionid.KeyRef // the key of its id: its state ends when that key is dropped
	done    chan struct{}    // closed when the session's state here ends

	mu       sync.Mutex
	used     time.Time
	streams  int
	logLevel string
	subs     []string
	changed  chan struct{} // closed (and replaced) when subs change
}

// Active reports whether the front serves legacy clients now.
func (f *LegacyFront) Active() bool {
	e := f.Eras()
	return e.Known && e.Modern && !e.Legacy
}

// Start prepares the front and sweeps idle sessions until ctx ends, when
// it ends them all. Call it once before use.
func (f *LegacyFront) Start(ctx context.Context) {
	if f.MaxSessions <= 0 {
		f.MaxSessions = DefaultMaxFrontSessions
	}
	if f.IdleTimeout <= 0 {
		f.IdleTimeout = DefaultFrontIdle
	}
	if f.MaxStreams <= 0 {
		f.MaxStreams = DefaultMaxFrontStreams
	}
	if f.MaxSessionStreams <= 0 {
		f.MaxSessionStreams = DefaultMaxFrontSessionStreams
	}
	if f.MaxRevoked <= 0 {
		f.MaxRevoked = DefaultMaxFrontRevoked
	}
	if f.MaxSubscriptions <= 0 {
		f.MaxSubscriptions = DefaultMaxFrontSubscriptionsAll
	}
	if f.Lifetime <= 0 {
		f.Lifetime = DefaultFrontLifetime
	}
	if f.Keys == nil {
		k, _ := sessionid.NewKeys(sessionid.NewRandomKey()) // one key of the right size: never fails
		f.Keys = func() *sessionid.Keys { return k }
	}
	if f.MaxBytes <= 0 {
		f.MaxBytes = 32 << 20
	}
	if f.now == nil {
		f.now = time.Now
	}
	f.sessions = map[mintedKey]*frontLocal{}
	f.revoked = map[mintedKey]revocation{}
	if f.Callers == nil {
		f.Callers = &caller.Resolver{Credentials: onbehalf.Credentials(f.Credentials)}
	}
	table := func(name string, capacity int) *caller.Table {
		return caller.NewTable(caller.TableOptions{Name: name, Cap: capacity, SharePercent: f.SharePercent, Metrics: f.Metrics})
	}
	f.places = table(tableFrontSessions, f.MaxSessions)
	f.streams = table(tableFrontStreams, f.MaxStreams)
	f.subs = table(tableFrontSubscriptions, f.MaxSubscriptions)
	f.revocations = table(tableFrontRevocations, f.MaxRevoked)
	f.Metrics.CallerRefusalTable(tableFrontSessionStreams) // the sessions' own bounds: at 0 until one
	f.Metrics.CallerRefusalTable(tableFrontSessionSubscriptions)
	f.calls = map[callKey]*frontCall{}
	f.call = &onbehalf.Upstream{URL: f.Upstream, Client: &http.Client{Transport: f.Next}, Credentials: f.Credentials,
		MaxBytes: f.MaxBytes, Purpose: "legacy-front"}
	go func() {
		tick := time.NewTicker(f.IdleTimeout / 4)
		defer tick.Stop()
		// The channel of the next change is taken before a sweep for
		// the last one reads Keys: a change while any sweep runs closes
		// it, and is swept for in turn, never missed.
		keysChanged := func() <-chan struct{} {
			if f.KeysChanged == nil {
				return nil // never ready
			}
			return f.KeysChanged()
		}
		changed := keysChanged()
		for {
			select {
			case <-ctx.Done():
				f.endAll()
				return
			case <-tick.C:
				f.sweep()
			case <-changed:
				changed = keysChanged()
				f.sweep()
			}
		}
	}()
}

// RoundTrip implements http.RoundTripper.
func (f *LegacyFront) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.sessions == nil || !f.Active() {
		return f.Next.RoundTrip(req)
	}
	sid := req.Header.Get("Mcp-Session-Id")
	switch req.Method {
	case http.MethodGet:
		if sid == "" || req.Header.Get(wire.HeaderProtocolVersion) >= ModernVersion {
			return f.Next.RoundTrip(req)
		}
		if err := checkVersion(req); err != nil {
			return nil, err
		}
		s := f.lookup(req, sid)
		if s == nil {
			return nil, unknownSession()
		}
		return f.stream(req, s)
	case http.MethodDelete:
		if sid == "" {
			return f.Next.RoundTrip(req)
		}
		if err := checkVersion(req); err != nil {
			return nil, err
		}
		s := f.lookup(req, sid)
		if s == nil {
			return nil, unknownSession()
		}
		f.revoke(req, s)
		return nil, &reply.Answer{Status: http.StatusNoContent}
	case http.MethodPost:
	default:
		return f.Next.RoundTrip(req)
	}
	msg, ok, err := requestMessage(req)
	if err != nil {
		return nil, err
	}
	if !ok || wire.ClaimsModern(req.Header, msg.Params) {
		return f.Next.RoundTrip(req)
	}
	if err := checkVersion(req); err != nil {
		return nil, err
	}
	if msg.Kind == rewrite.KindRequest && msg.Method == "initialize" {
		return f.initialize(req, msg)
	}
	if sid == "" {
		// What a legacy server that mints sessions answers (2025-11-25
		// Streamable HTTP, session management).
		return nil, refuse(http.StatusBadRequest, reply.CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required", nil)
	}
	s := f.lookup(req, sid)
	if s == nil {
		return nil, unknownSession()
	}
	if msg.Kind == rewrite.KindNotification && msg.Method == "notifications/cancelled" {
		// The modern wire's cancellation is the request's stream closed.
		if id, ok := rewrite.GetKey(msg.Params, []string{"requestId"}); ok {
			f.cancelCall(s, id)
		}
	}
	if msg.Kind != rewrite.KindRequest {
		// notifications/initialized, cancelled, roots/list_changed, and
		// responses: the modern wire has no client notifications over
		// HTTP (closing a request's stream cancels it: above).
		return nil, &reply.Answer{Status: http.StatusAccepted}
	}
	switch msg.Method {
	case "ping":
		// The modern wire has no ping: its cheapest request, asked with the
		// caller's credentials, so that the upstream judges them on every
		// request of the session, as a legacy server does (the auth gate's
		// probe of a legacy caller is this ping; an id that still opens
		// does not make credentials the upstream no longer takes good).
		if _, err := f.discover(req, s.caps, s.info); err != nil {
			return nil, err
		}
		return nil, answered(emptyResult)
	case "logging/setLevel":
		level, ok := rewrite.GetString(msg.Params, "level")
		if !ok {
			return nil, refuse(http.StatusOK, reply.CodeInvalidParams, "logging/setLevel needs params.level", nil)
		}
		l, err := f.local(req, s)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.logLevel = level
		l.mu.Unlock()
		return nil, answered(emptyResult)
	case "resources/subscribe", "resources/unsubscribe":
		uri, ok := rewrite.GetString(msg.Params, "uri")
		if !ok {
			return nil, refuse(http.StatusOK, reply.CodeInvalidParams, msg.Method+" needs params.uri", nil)
		}
		if msg.Method == "resources/subscribe" && len(uri) > MaxSubscriptionURI {
			return nil, refuse(http.StatusOK, reply.CodeInvalidParams,
				"era bridge: a subscribed URI is at most "+strconv.Itoa(MaxSubscriptionURI)+" bytes", map[string]string{"reason": "bridge_subscription_uri_too_long"})
		}
		l, err := f.local(req, s)
		if err != nil {
			return nil, err
		}
		if r := f.subscribe(l, uri, msg.Method == "resources/subscribe"); r != nil {
			return nil, &failure{reply: r}
		}
		return nil, answered(emptyResult)
	}
	return f.forward(req, s, msg)
}

// lookup opens sid for the caller of req: nil when no key opens it for
// that caller's credentials, it expired, or DELETE revoked it here.
func (f *LegacyFront) lookup(req *http.Request, sid string) *frontSession {
	cred := onbehalf.CredentialKey(req.Header, onbehalf.Credentials(f.Credentials)...)
	now := f.now()
	st, err := f.Keys().Open(sid, cred[:], now)
	if err != nil {
		return nil
	}
	s := &frontSession{key: sha256.Sum256([]byte(sid)), version: st.Version, caps: st.Capabilities, info: st.ClientInfo, expires: st.Expires, sealed: st.Key}
	f.mu.Lock()
	_, gone := f.revoked[s.key]
	l := f.sessions[s.key]
	f.mu.Unlock()
	if gone {
		return nil
	}
	if l != nil {
		l.mu.Lock()
		l.used = now
		l.mu.Unlock()
	}
	return s
}

// checkVersion is the legacy server's refusal of a request whose
// MCP-Protocol-Version header names a legacy version the front does not
// speak (BridgedLegacyVersions): 400, as go-sdk answers it; nil when the
// header is absent or names one.
func checkVersion(req *http.Request) error {
	if e := wire.CheckLegacyVersion(req.Header, BridgedLegacyVersions); e != nil {
		return &failure{reply: e}
	}
	return nil
}

// unknownSession is the legacy answer to a session id the front does not
// know for this caller: 404, on which a legacy client starts a new session.
func unknownSession() error {
	return refuse(http.StatusNotFound, reply.CodeInvalidRequest, "Session not found", nil)
}

// initialize answers a legacy initialize from the upstream's
// server/discover and mints a session.
func (f *LegacyFront) initialize(req *http.Request, msg rewrite.Message) (*http.Response, error) {
	requested, theirCaps, theirInfo, ok := initializeParams(msg.Params)
	if !ok {
		return nil, refuse(http.StatusOK, reply.CodeInvalidParams, "invalid initialize params", nil)
	}
	caps := json.RawMessage("{}")
	if rewrite.IsObject(theirCaps) {
		var c bytes.Buffer
		if json.Compact(&c, theirCaps) == nil {
			caps = c.Bytes()
		}
	}
	info := bridgeClientInfo
	if rewrite.IsObject(theirInfo) {
		var c bytes.Buffer
		if json.Compact(&c, theirInfo) == nil {
			info = c.Bytes()
		}
	}
	version := NegotiateLegacy(requested)
	// Sealed first: a client whose capabilities and clientInfo do not fit
	// in an id costs the upstream nothing.
	sid, err := f.mint(req, version, caps, info)
	if err != nil && !errors.Is(err, sessionid.ErrTooLarge) {
		return nil, failed(http.StatusInternalServerError, "era bridge: no session key to mint a session with", "bridge_no_session_key", err)
	}
	if err != nil {
		return nil, refuse(http.StatusOK, reply.CodeInvalidParams,
			"initialize: capabilities and clientInfo take more than "+strconv.Itoa(sessionid.MaxState)+" bytes together (compact JSON), more than a session id carries",
			map[string]string{"reason": "session_state_too_large"})
	}
	result, err := f.discover(req, caps, info)
	if err != nil {
		return nil, err
	}
	out, err := InitializeFromDiscover(result, version)
	if err != nil {
		return nil, failed(badGateway, "era bridge: the upstream's server/discover result is unreadable", "bridge_discover_failed", err)
	}
	return nil, &reply.Answer{Result: out, Header: http.Header{"Mcp-Session-Id": {sid}}}
}

// discover asks the upstream's server/discover on behalf of the caller of
// req, a client of capabilities caps and clientInfo info: with its
// credentials and trace, none of its legacy session or version headers.
// It returns the result, or what the caller gets instead: the upstream's
// refusal, its JSON-RPC error (renumbered; the proxy gives it the
// caller's id), or a failure.
func (f *LegacyFront) discover(req *http.Request, caps, info json.RawMessage) (json.RawMessage, error) {
	r := req.Clone(req.Context()) // its header a clone too
	r.Header.Del("Mcp-Session-Id")
	r.Header.Del("Mcp-Protocol-Version")
	meta, _ := json.Marshal(map[string]json.RawMessage{"_meta": mustMeta(caps, info)})
	caller := rewrite.Message{Kind: rewrite.KindRequest, Method: "server/discover", Params: meta}
	m, err := f.call.Call(r, caller, "server/discover", nil)
	var ref *onbehalf.Refusal
	switch {
	case errors.As(err, &ref):
		return nil, ref
	case err != nil:
		return nil, failed(badGateway, "era bridge: the upstream's server/discover failed", "bridge_discover_failed", err)
	case m.Kind == rewrite.KindError:
		return nil, &reply.Answer{ErrorObject: LegacyError("server/discover", m.Error)}
	}
	return m.Result, nil
}

func mustMeta(caps, info json.RawMessage) json.RawMessage {
	v, _ := json.Marshal(ModernVersion)
	b, _ := json.Marshal(map[string]json.RawMessage{metaProtocol: v, metaClientCaps: caps, metaClientInfo: info})
	return b
}

// mint seals a new session for the caller of req into its id; it fails
// when the state is too large for an id (sessionid.ErrTooLarge), or when
// Keys holds none (which Start and package sessionkeys never leave).
func (f *LegacyFront) mint(req *http.Request, version string, caps, info json.RawMessage) (string, error) {
	cred := onbehalf.CredentialKey(req.Header, onbehalf.Credentials(f.Credentials)...)
	return f.Keys().Seal(sessionid.State{Version: version, Capabilities: caps, ClientInfo: info, Expires: f.now().Add(f.Lifetime)}, cred[:])
}

// local returns s's state on this replica, made when s has none, in a
// place of the table bridge_sessions taken for the caller of req; a
// refusal when the caller holds its share or the table is full, even
// after idle states are ended; unknownSession when s's key was dropped
// since its id was opened (held checks that).
func (f *LegacyFront) local(req *http.Request, s *frontSession) (*frontLocal, error) {
	if l := f.peek(s); l != nil {
		return l, nil
	}
	who := f.Callers.Of(req)
	if err := f.places.Acquire(who, f.makeRoom); err != nil {
		return nil, &failure{reply: err.(*caller.Refusal).Reply()}
	}
	now := f.now()
	f.mu.Lock()
	l := f.sessions[s.key]
	if l != nil || !f.heldLocked(s) { // made meanwhile by another request of s, or its key dropped
		f.mu.Unlock()
		f.places.Release(who)
		if l == nil {
			return nil, unknownSession()
		}
		return l, nil
	}
	l = &frontLocal{owner: who, expires: s.expires, sealed: s.sealed, done: make(chan struct{}), used: now, changed: make(chan struct{})}
	f.sessions[s.key] = l
	n := len(f.sessions)
	f.mu.Unlock()
	f.report(n)
	return l, nil
}

// makeRoom is how the tables free places (caller.Table.Acquire): it ends
// idle and expired states and expired revocations, and reports whether it
// freed any. A sweep walks every table, so it runs only when one is full.
func (f *LegacyFront) makeRoom(bool) bool { return f.sweep() > 0 }

// heldLocked reports whether Keys still holds the key that opened s's id.
// State or a call of s is added under f.mu after it says so: a sweep on a
// change of the keys (which reads Keys after the change, then takes f.mu)
// either finds it or ran before the check, which then sees the new keys.
// So a request that opened its id just before its key was dropped leaves
// nothing of it behind. f.mu is held.
func (f *LegacyFront) heldLocked(s *frontSession) bool { return f.Keys().Holds(s.sealed) }

// peek returns s's state on this replica, or nil.
func (f *LegacyFront) peek(s *frontSession) *frontLocal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[s.key]
}

// revoke ends s on this replica: its state here ends and its id opens
// here no more until it expires. Other replicas still open it (they do
// not learn of the DELETE). A revocation takes a place of the table
// bridge_revocations for the caller of req until the id expires; without
// one (the caller's share, or the table full) the id is not remembered.
func (f *LegacyFront) revoke(req *http.Request, s *frontSession) {
	who := f.Callers.Of(req)
	remember := f.revocations.Acquire(who, f.makeRoom) == nil
	f.mu.Lock()
	if l := f.sessions[s.key]; l != nil {
		f.forgetLocked(s.key, l)
	}
	if _, dup := f.revoked[s.key]; dup && remember {
		remember = false
		f.revocations.Release(who)
	}
	if remember {
		f.revoked[s.key] = revocation{expires: s.expires, owner: who}
	}
	n := len(f.sessions)
	f.mu.Unlock()
	f.report(n)
}

// revocation is an id DELETE ended on this replica.
type revocation struct {
	expires time.Time
	owner   caller.ID // whose place of bridge_revocations it takes
}

// forgetLocked ends the state l of session k (f.mu held): its streams end
// and its places are given back, the session's and its subscriptions'.
func (f *LegacyFront) forgetLocked(k mintedKey, l *frontLocal) {
	delete(f.sessions, k)
	close(l.done)
	f.places.Release(l.owner)
	l.mu.Lock()
	for range l.subs {
		f.subs.Release(l.owner)
	}
	l.subs = nil
	l.mu.Unlock()
}

// sweep ends every session state idle past the timeout with no stream
// open, past its session's expiry, or whose key is gone from Keys (its
// streams end, its requests under way are cancelled), and forgets expired
// revocations (not those of a dropped key: it may come back); it returns
// how many places it freed. Its work is bounded by the tables' sizes; it
// cancels outside the lock.
func (f *LegacyFront) sweep() int {
	now := f.now()
	keys := f.Keys()
	freed := 0
	var gone []*frontCall
	f.mu.Lock()
	for k, l := range f.sessions {
		l.mu.Lock()
		end := !now.Before(l.expires) || l.streams == 0 && now.Sub(l.used) > f.IdleTimeout || !keys.Holds(l.sealed)
		l.mu.Unlock()
		if end {
			f.forgetLocked(k, l)
			freed++
		}
	}
	for k, r := range f.revoked {
		if !now.Before(r.expires) {
			delete(f.revoked, k)
			f.revocations.Release(r.owner)
			freed++
		}
	}
	for _, c := range f.calls {
		if !keys.Holds(c.sealed) {
			gone = append(gone, c)
		}
	}
	n := len(f.sessions)
	f.mu.Unlock()
	for _, c := range gone {
		c.Cancel()
	}
	f.report(n)
	return freed
}

func (f *LegacyFront) endAll() {
	f.mu.Lock()
	for k, l := range f.sessions {
		f.forgetLocked(k, l)
	}
	f.mu.Unlock()
	f.report(0)
}

func (f *LegacyFront) report(n int) {
	if f.OnSessions != nil {
		f.OnSessions(n)
	}
}

// Sessions is the number of minted sessions holding state on this
// replica (tests, metrics).
func (f *LegacyFront) Sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

// subscribe adds uri to l's subscriptions (on) or removes it: at most
// DefaultMaxFrontSubscriptions per session (the session's own bound,
// bridge_session_subscriptions), and a place of the table
// bridge_subscriptions for l's owner each; a refusal otherwise.
func (f *LegacyFront) subscribe(l *frontLocal, uri string, on bool) *reply.Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		return nil // ended: forgetLocked gave its places back
	default:
	}
	i := slices.Index(l.subs, uri)
	switch {
	case on && i < 0:
		if len(l.subs) >= DefaultMaxFrontSubscriptions {
			f.Metrics.CallerRefusal(tableFrontSessionSubscriptions, true)
			return caller.SessionBound(tableFrontSessionSubscriptions, DefaultMaxFrontSubscriptions, "subscriptions").Reply()
		}
		if err := f.subs.Acquire(l.owner, nil); err != nil {
			return err.(*caller.Refusal).Reply()
		}
		l.subs = append(l.subs, uri)
	case !on && i >= 0:
		l.subs = slices.Delete(l.subs, i, i+1)
		f.subs.Release(l.owner)
	default:
		return nil
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// modernHeaders makes out's headers those of a 2026-07-28 request for
// method with params: the session's id and legacy-only headers removed,
// MCP-Protocol-Version, Mcp-Method and Mcp-Name set. h must be a clone
// (see setOne).
func modernHeaders(h http.Header, method string, params json.RawMessage) {
	h.Del("Mcp-Session-Id")
	h.Del("Last-Event-Id")
	h.Del("Content-Length")
	h.Del("Accept-Encoding") // the reply is parsed to be translated
	setOne(h, wire.HeaderProtocolVersion, ModernVersion)
	setOne(h, wire.HeaderMethod, method)
	if p := wire.NameParam(method); p != "" {
		if v, ok := rewrite.GetString(params, p); ok {
			setOne(h, wire.HeaderName, wire.EncodeHeaderValue(v))
			return
		}
	}
	h.Del(wire.HeaderName)
}

// setOne is h.Set(k, v) for a canonical k, in h's own value slice when k
// has one value already: h is a request's header cloned (http.Header.Clone
// gives the clone its own values), so no other header shares it.
func setOne(h http.Header, k, v string) {
	if vs := h[k]; len(vs) == 1 {
		vs[0] = v
		return
	}
	h[k] = []string{v}
}

// forward sends a request of session s to the upstream on the modern wire
// and translates its reply.
func (f *LegacyFront) forward(req *http.Request, s *frontSession, msg rewrite.Message) (*http.Response, error) {
	level := ""
	if l := f.peek(s); l != nil {
		l.mu.Lock()
		level = l.logLevel
		l.mu.Unlock()
	}
	params, err := ModernParams(msg.Params, s.caps, s.info, level)
	if err != nil {
		// The client's own params could not be made modern: its fault,
		// and nothing to log.
		return nil, refuse(http.StatusOK, reply.CodeInvalidParams, "invalid params: params and their _meta must be objects", nil)
	}
	body := ModernRequest(msg, params)
	call := f.startCall(req.Context(), s, msg.ID)
	if call == nil {
		return nil, unknownSession()
	}
	done := call.end
	out := rebuilt(call, req, body)
	modernHeaders(out.Header, msg.Method, params)
	resp, err := f.Next.RoundTrip(out)
	if err != nil {
		done()
		return nil, err
	}
	mt, _ := wire.MediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(f.MaxBytes)+1))
		resp.Body.Close()
		done()
		if err != nil {
			return nil, err
		}
		if len(b) > f.MaxBytes {
			return nil, errTooLarge
		}
		// Parsed once: a reply legacyReply changes is an error.
		m, perr := rewrite.ParseMessage(b)
		if perr == nil {
			if t, changed := legacyReply(msg.Method, m); changed {
				b, m.Kind = t, rewrite.KindError
			}
		}
		if perr == nil && m.Kind == rewrite.KindError &&
			(resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound) {
			// A legacy server answers a JSON-RPC error with 200; a legacy
			// client takes 404 for a lost session.
			resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	case "text/event-stream":
		resp.Body = &legacyEvents{r: rewrite.NewReader(resp.Body, f.MaxBytes), up: resp.Body, msg: msg, done: done}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	default:
		resp.Body = &endingBody{ReadCloser: resp.Body, end: done}
	}
	return resp, nil
}

// frontCall is a request of a session under way upstream: its context,
// which the client's leaving cancels, and so does (on this replica) the
// client's notifications/cancelled for its id, and its place in the table
// of calls. It is one allocation with its context (package slotctx), where
// context.WithCancel under the client's and the upstream transport's
// watch on it cost eleven.
type frontCall struct {
	slotctx.Context
	f          *LegacyFront
	key        callKey
	sealed     sessionid.KeyRef // the key of its session's id
	registered bool             // in f.calls
}

// startCall registers a request of s under way upstream and returns it. A
// second request under an id already in flight (which the legacy wire
// forbids) is not registered: a cancellation of that id cannot tell the
// two apart, so it cancels the first only. It returns nil when s's key was
// dropped since its id was opened: the id opens no more.
func (f *LegacyFront) startCall(client context.Context, s *frontSession, id json.RawMessage) *frontCall {
	c := &frontCall{f: f, key: callKey{s.key, idmap.Key(id)}, sealed: s.sealed}
	c.Init(client)
	c.Watch()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.heldLocked(s) {
		c.Cancel()
		c.Unwatch()
		return nil
	}
	if _, dup := f.calls[c.key]; !dup && c.key.id != "" {
		f.calls[c.key] = c
		c.registered = true
	}
	return c
}

// end ends c: out of the table, canceled (harmless once the reply was
// read), and no longer watching the client. Calls after the first do
// nothing more.
func (c *frontCall) end() {
	if c.registered {
		c.f.mu.Lock()
		if c.f.calls[c.key] == c {
			delete(c.f.calls, c.key)
		}
		c.f.mu.Unlock()
	}
	c.Cancel()
	c.Unwatch()
}

// cancelCall cancels s's request id if it is under way here.
func (f *LegacyFront) cancelCall(s *frontSession, id json.RawMessage) {
	f.mu.Lock()
	c := f.calls[callKey{s.key, idmap.Key(id)}]
	f.mu.Unlock()
	if c != nil {
		c.Cancel()
	}
}

// legacyEvents is a modern SSE reply read as a legacy client reads it:
// the response to msg translated by LegacyReply, every other event as it
// came. It reads the upstream as it is read, in the reader's goroutine.
// At the reply's end, or when closed, it closes the upstream body and
// calls done, once.
type legacyEvents struct {
	r    *rewrite.Reader
	up   io.Closer
	msg  rewrite.Message
	done func()

	pending []byte // what is left of the event being read
	err     error  // the upstream's end, once met
	closed  atomic.Bool
	once    sync.Once
}

func (l *legacyEvents) Read(p []byte) (int, error) {
	if l.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	for len(l.pending) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		ev, err := l.r.Next()
		if err != nil {
			l.end()
			l.err = err
			continue
		}
		l.pending = ev.Raw
		if ev.Data != nil {
			if m, perr := rewrite.ParseMessage(ev.Data); perr == nil && (m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError) && idmap.Same(m.ID, l.msg.ID) {
				if t, changed := legacyReply(l.msg.Method, m); changed {
					l.pending = reply.Event(t)
				}
			}
		}
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// Buffered says what Read returns without waiting for the upstream
// (rewrite.Buffered), for the proxy's relay: whether to flush before
// reading on, and whether the reply's first event came with its head.
func (l *legacyEvents) Buffered() int { return rewrite.Buffered(l.pending, l.err, l.r) }

// Arrived says whether anything of the reply has come that Read has not
// returned (rewrite.Reader.Arrived), for the proxy's relay: a reply whose
// first bytes came with its head does not get its head flushed alone.
func (l *legacyEvents) Arrived() bool { return len(l.pending) > 0 || l.err != nil || l.r.Arrived() }

// Close ends the reply: a Read after it fails.
func (l *legacyEvents) Close() error {
	l.closed.Store(true)
	l.end()
	return nil
}

func (l *legacyEvents) end() {
	l.once.Do(func() {
		_ = l.up.Close()
		l.done()
	})
}

// stream serves a legacy GET stream of s from subscriptions/listen
// requests to the upstream, one at a time, reopened when s's subscriptions
// change; it ends when the client leaves, s ends, or the upstream ends
// the listen stream.
func (f *LegacyFront) stream(req *http.Request, s *frontSession) (*http.Response, error) {
	l, err := f.local(req, s)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.streams >= f.MaxSessionStreams {
		l.mu.Unlock()
		f.Metrics.CallerRefusal(tableFrontSessionStreams, true)
		return nil, &failure{reply: caller.SessionBound(tableFrontSessionStreams, f.MaxSessionStreams, "GET streams").Reply()}
	}
	who := f.Callers.Of(req)
	if err := f.streams.Acquire(who, nil); err != nil {
		l.mu.Unlock()
		return nil, &failure{reply: err.(*caller.Refusal).Reply()}
	}
	l.streams++
	l.mu.Unlock()
	pr, pw := io.Pipe()
	go func() {
		defer func() {
			f.streams.Release(who)
			l.mu.Lock()
			l.streams--
			l.used = f.now()
			l.mu.Unlock()
		}()
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		go func() {
			select {
			case <-l.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		for ctx.Err() == nil {
			if !f.listenOnce(ctx, req, s, l, pw) {
				break
			}
		}
		pw.Close()
	}()
	return nil, &reply.Answer{Events: pr}
}

// listenOnce holds one subscriptions/listen for s and relays its
// notifications to pw. It reports whether to open another: true when s's
// subscriptions changed.
func (f *LegacyFront) listenOnce(ctx context.Context, req *http.Request, s *frontSession, l *frontLocal, pw *io.PipeWriter) bool {
	l.mu.Lock()
	subs, changed := slices.Clone(l.subs), l.changed
	l.mu.Unlock()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reopen := atomic.Bool{}
	go func() {
		select {
		case <-changed:
			reopen.Store(true)
			cancel()
		case <-lctx.Done():
		}
	}()
	body := ListenFilter(onbehalf.NewID("legacy-get"), subs, s.caps, s.info)
	out := rebuilt(lctx, req, body)
	out.Method = http.MethodPost
	modernHeaders(out.Header, "subscriptions/listen", nil)
	out.Header.Set("Content-Type", "application/json")
	out.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := f.Next.RoundTrip(out)
	if err != nil {
		return reopen.Load()
	}
	defer resp.Body.Close()
	if mt, _ := wire.MediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// No listen stream (the upstream refused it): nothing will come
		// from it; hold the GET stream, which carries the sidecar's own
		// notifications, until the client leaves or the filter changes.
		<-lctx.Done()
		return reopen.Load()
	}
	r := rewrite.NewReader(resp.Body, f.MaxBytes)
	for {
		ev, err := r.Next()
		if err != nil {
			return reopen.Load()
		}
		if ev.Data != nil && !LegacyNotification(ev.Data) {
			continue
		}
		if _, err := pw.Write(ev.Raw); err != nil {
			return false
		}
	}
}
