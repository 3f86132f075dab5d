// Package authgate owns the auth gate: the check that a request the sidecar
// answers itself (skills/*, agents/*, skill files, directory reads) comes
// from a caller the upstream would admit (docs/design.md, decision 5). The sidecar
// holds no credentials of its own and judges none: it asks the upstream,
// with the caller's own headers, through a cheap probe of the caller's era,
// and caches an admission briefly under a hash of the credential headers
// (and session). Only a result answering the probe itself admits. The
// probe of a new caller's first skills listing is the discovery's own
// resources/list, sent with the same headers (Witness): one request on
// that page's path instead of two side by side, and its refusal is the
// caller's.
//
// The probe is a request made on the caller's behalf (package onbehalf
// builds it and judges which reply answers it). The gate writes nothing:
// its verdict is a value, and a refusal is the upstream's own
// (*onbehalf.Refusal), which the proxy passes on with the upstream's
// status and WWW-Authenticate, so an OAuth-aware client starts its flow
// exactly as it would against the upstream, and with the caller's own
// JSON-RPC id. The package never logs or stores a credential: only hashes.
package authgate

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Defaults for Options fields left zero.
const (
	DefaultTTL        = 10 * time.Second
	DefaultMaxEntries = 4096
)

// Options configure a Gate.
type Options struct {
	// Upstream is the upstream MCP endpoint the probe goes to. Required.
	Upstream *url.URL
	// Client sends probes; nil means http.DefaultClient.
	Client *http.Client
	// CredentialHeaders identify a caller; nil means
	// onbehalf.DefaultCredentials. Mcp-Session-Id always joins the key, since
	// an upstream may admit a token only within its own session.
	CredentialHeaders []string
	// TTL is how long an admission is trusted; 0 means DefaultTTL.
	TTL time.Duration
	// MaxEntries bounds the admissions cached; 0 means DefaultMaxEntries.
	MaxEntries int
	// Metrics records verdicts and cache hits; nil records nothing.
	Metrics *metrics.Metrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Gate admits or refuses callers. The zero value is not usable; use New.
type Gate struct {
	opts Options
	keys []string           // credential headers and Mcp-Session-Id: the cache key
	up   *onbehalf.Upstream // sends the probe
	mu   sync.Mutex
	seen map[[sha256.Size]byte]time.Time // admission expiry by key
}

// New returns a Gate.
func New(opts Options) *Gate {
	if opts.CredentialHeaders == nil {
		opts.CredentialHeaders = onbehalf.DefaultCredentials()
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	keys := append(slices.Clone(opts.CredentialHeaders), "Mcp-Session-Id")
	up := &onbehalf.Upstream{URL: opts.Upstream, Client: opts.Client, Credentials: opts.CredentialHeaders,
		MaxBytes: maxProbeReply, Purpose: "auth", StatusRefuses: true}
	return &Gate{opts: opts, keys: keys, up: up, seen: map[[sha256.Size]byte]time.Time{}}
}

func (g *Gate) key(r *http.Request) [sha256.Size]byte { return onbehalf.CallerKey(r, g.keys...) }

// maxProbeReply bounds what is read of the upstream's answer to a probe.
const maxProbeReply = 1 << 20

// Admit is the gate's verdict on whether the caller of r may have msg
// answered by the sidecar: nil admits; any other error is the reply the
// caller gets instead, which the proxy writes with msg's id: the
// upstream's refusal (an *onbehalf.Refusal, passed on), a 502 *reply.Error
// when the upstream's answer was not a result for the probe, or a failure
// of the probe (onbehalf.ErrUnreachable: 502 or 504) when the upstream
// could not be asked; the request's own context's error, with no verdict
// counted, when the caller left during the probe.
//
// Only a result answering the probe itself admits (docs/design.md, decision 5):
// HTTP 200 and a JSON-RPC response whose id is the probe's, as JSON or as
// the response event of an SSE stream. A status alone, an empty body, an
// error, a response to another id, a stream that ends without the
// response: none of them admits, and none is cached.
func (g *Gate) Admit(r *http.Request, msg rewrite.Message) error {
	k := g.key(r)
	now := g.opts.Now()
	g.mu.Lock()
	exp, ok := g.seen[k]
	g.mu.Unlock()
	if ok && now.Before(exp) {
		g.opts.Metrics.AuthVerdict("allowed", true)
		return nil
	}
	method := probeMethod(msg)
	answer, err := g.up.Call(r, msg, method, nil)
	var ref *onbehalf.Refusal
	switch {
	case errors.As(err, &ref):
		g.opts.Metrics.AuthVerdict("refused", false)
		return ref
	case err != nil && r.Context().Err() != nil:
		// The caller left (or its request's deadline passed) during the
		// probe: no word on the caller, so no verdict is counted.
		return err
	case errors.Is(err, onbehalf.ErrUnreachable):
		// The probe got no reply (refused, a dead pooled connection, a
		// timeout): the gate fails closed with upstream_unreachable or
		// upstream_timeout.
		g.opts.Metrics.AuthVerdict("error", false)
		return err
	case err != nil || answer.Kind != rewrite.KindResponse:
		g.opts.Metrics.AuthVerdict("error", false)
		return probeFailure(method, answer, err)
	}
	g.cache(k, now)
	g.opts.Metrics.AuthVerdict("allowed", false)
	return nil
}

// cache caches an admission of key k from now.
func (g *Gate) cache(k [sha256.Size]byte, now time.Time) {
	g.mu.Lock()
	if len(g.seen) >= g.opts.MaxEntries {
		clear(g.seen) // the cost of a full cache is a new probe, never a wrong verdict
	}
	g.seen[k] = now.Add(g.opts.TTL)
	g.mu.Unlock()
}

// Witness admits the caller of r on the answer to another request the
// sidecar made on its behalf, so that the request need not be followed by
// a probe of its own: the overlay's first resources/list of a new caller's
// discovery (package methods), whose reply is on the caller's first page's
// path anyway. The rule is the probe's: only a result at HTTP 200 admits,
// and answer must be what onbehalf.Upstream.CallStatus returned for that
// request, which was sent with r's headers (so with the credentials and
// session the gate's key is made of) and which only a response carrying
// its own id answers. Anything else (an error, a refusal, no reply)
// admits nothing: Admit then probes as it always does. A refusal (err an
// *onbehalf.Refusal) is counted as the gate's refusal, since the caller
// gets it as the gate's (package methods passes it on: the page needs that
// listing, so a probe could not change the answer). decides says whether
// r is a request the sidecar answers itself, whose verdict this is (a
// first skills/list): otherwise (a handshake the sidecar forwards, whose
// discovery was started ahead) the admission is cached and no verdict is
// counted, and the request that later meets the cache counts its hit. It
// reports whether it admitted.
func (g *Gate) Witness(r *http.Request, status int, answer rewrite.Message, err error, decides bool) bool {
	if ref := (*onbehalf.Refusal)(nil); errors.As(err, &ref) {
		if decides {
			g.opts.Metrics.AuthVerdict("refused", false)
		}
		return false
	}
	if err != nil || status != http.StatusOK || answer.Kind != rewrite.KindResponse {
		return false
	}
	g.cache(g.key(r), g.opts.Now())
	if decides {
		g.opts.Metrics.AuthVerdict("allowed", false)
	}
	return true
}

// probeFailure is the reply to a caller whose probe got HTTP 200 but no
// result for itself: the upstream could not be asked properly, so the
// caller is neither admitted nor told it is refused.
func probeFailure(method string, answer rewrite.Message, err error) *reply.Error {
	e := &reply.Error{Status: http.StatusBadGateway, Code: reply.CodeInternalError,
		Data: map[string]any{"reason": "auth_probe_failed"}}
	if err != nil {
		e.Message = "the upstream's answer to the auth check (" + method + ") is not its reply: " + err.Error()
		return e
	}
	e.Message = "the upstream answered the auth check (" + method + ") with an error"
	e.Data = map[string]any{"reason": "auth_probe_failed", "error": answer.Error}
	return e
}

// probeMethod is the cheapest request of the caller's era, which the gate
// sends on its behalf (package onbehalf): ping on the legacy wire, within
// the caller's session; server/discover with the caller's _meta on the
// modern wire, which has no ping. An upstream's auth check runs before any
// method, so its result means the caller is admitted.
func probeMethod(msg rewrite.Message) string {
	if onbehalf.Modern(msg) {
		return "server/discover"
	}
	return "ping"
}
