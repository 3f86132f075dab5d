// Package authgate owns the auth gate: the check that a request the sidecar
// answers itself (skills/*, agents/*, skill files, directory reads) comes
// from a caller the upstream would admit (DESIGN.md decision 4). The sidecar
// holds no credentials of its own and judges none: it asks the upstream,
// with the caller's own headers, through a cheap forwarded ping, and caches
// an admission briefly under a hash of the credential headers (and session).
//
// A refusal passes on the upstream's own status, WWW-Authenticate and body,
// so an OAuth-aware client starts its flow exactly as it would against the
// upstream. The package never logs or stores a credential: only hashes.
package authgate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Defaults for Options fields left zero.
const (
	DefaultTTL        = 10 * time.Second
	DefaultMaxEntries = 4096
)

// DefaultCredentialHeaders are the headers that identify a caller unless
// configured otherwise.
func DefaultCredentialHeaders() []string { return []string{"Authorization", "Cookie"} }

// Options configure a Gate.
type Options struct {
	// Upstream is the upstream MCP endpoint the probe goes to. Required.
	Upstream *url.URL
	// Client sends probes; nil means http.DefaultClient.
	Client *http.Client
	// CredentialHeaders identify a caller; nil means
	// DefaultCredentialHeaders. Mcp-Session-Id always joins the key, since
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
	keys []string // credential headers and Mcp-Session-Id: the cache key
	fwd  []string // the headers a probe carries
	mu   sync.Mutex
	seen map[[sha256.Size]byte]time.Time // admission expiry by key
}

// New returns a Gate.
func New(opts Options) *Gate {
	if opts.CredentialHeaders == nil {
		opts.CredentialHeaders = DefaultCredentialHeaders()
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
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	keys := append(slices.Clone(opts.CredentialHeaders), "Mcp-Session-Id")
	fwd := append(slices.Clone(keys), "Mcp-Protocol-Version", "Traceparent")
	return &Gate{opts: opts, keys: keys, fwd: fwd, seen: map[[sha256.Size]byte]time.Time{}}
}

func (g *Gate) key(h http.Header) [sha256.Size]byte { return CredentialKey(h, g.keys...) }

// CopyHeaders copies the named headers of src, those that are present, to
// dst: how a request made on a caller's behalf carries the caller's
// credentials (and whatever else names lists) to the upstream.
func CopyHeaders(dst, src http.Header, names []string) {
	for _, k := range names {
		if v := src.Values(k); len(v) > 0 {
			dst[http.CanonicalHeaderKey(k)] = v
		}
	}
}

// CredentialKey hashes the values of the named headers of h: the cache key
// of an authorization context. Credentials themselves are never stored.
func CredentialKey(h http.Header, names ...string) [sha256.Size]byte {
	sum := sha256.New()
	for _, k := range names {
		for _, v := range h.Values(k) {
			io.WriteString(sum, http.CanonicalHeaderKey(k)+"\x00"+v+"\x00")
		}
	}
	var out [sha256.Size]byte
	sum.Sum(out[:0])
	return out
}

// Admit reports whether the caller of r may have msg answered by the
// sidecar. When it returns false it has written the reply: the upstream's
// own refusal, or a 502/504 when the upstream could not be asked.
func (g *Gate) Admit(w http.ResponseWriter, r *http.Request, msg rewrite.Message) bool {
	k := g.key(r.Header)
	now := g.opts.Now()
	g.mu.Lock()
	exp, ok := g.seen[k]
	g.mu.Unlock()
	if ok && now.Before(exp) {
		g.opts.Metrics.AuthVerdict("allowed", true)
		return true
	}
	resp, err := g.probe(r, msg)
	if err != nil {
		g.opts.Metrics.AuthVerdict("error", false)
		// The probe got no reply (refused, a dead pooled connection, a
		// timeout): the gate fails closed with upstream_unreachable or
		// upstream_timeout.
		proxy.WriteError(w, msg.ID, proxy.NoReplyError(err))
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		g.mu.Lock()
		if len(g.seen) >= g.opts.MaxEntries {
			clear(g.seen) // the cost of a full cache is a new probe, never a wrong verdict
		}
		g.seen[k] = now.Add(g.opts.TTL)
		g.mu.Unlock()
		g.opts.Metrics.AuthVerdict("allowed", false)
		return true
	}
	g.opts.Metrics.AuthVerdict("refused", false)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	for _, h := range [...]string{"Www-Authenticate", "Content-Type", "Mcp-Session-Id"} {
		if v, ok := resp.Header[h]; ok {
			w.Header()[h] = v
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return false
}

// probe forwards the cheapest request of the caller's era with the caller's
// headers: ping within a legacy session, server/discover with the caller's
// _meta on the modern wire (which has no ping). An upstream's auth check runs
// before any method, so a 200 means the caller is admitted.
func (g *Gate) probe(r *http.Request, msg rewrite.Message) (*http.Response, error) {
	params := map[string]json.RawMessage{}
	method := "ping"
	meta, hasMeta := rewrite.GetKey(msg.Params, []string{"_meta"})
	if hasMeta {
		params["_meta"] = meta
		method = "server/discover"
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "skills-sidecar/auth", "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, g.opts.Upstream.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	CopyHeaders(req.Header, r.Header, g.fwd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if hasMeta {
		req.Header.Set("Mcp-Method", method)
	}
	return g.opts.Client.Do(req)
}
