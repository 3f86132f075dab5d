package methods

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/authgate"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// ToolSource returns the upstream's tools as this caller sees them, by name,
// each as the exact JSON object the upstream sent.
type ToolSource interface {
	Tools(r *http.Request, msg rewrite.Message) (map[string]json.RawMessage, error)
}

// ErrUnreachable wraps the error of a request made on a caller's behalf that
// got no HTTP reply at all (connection refused or reset, dial or header
// timeout); the transport's own error is wrapped too, so errors.Is still
// finds syscall.ECONNREFUSED or a timeout in it.
var ErrUnreachable = errors.New("upstream unreachable")

// Refusal is the upstream's refusal of a request the sidecar made on a
// caller's behalf (401, 403, …). It reaches the caller through
// authgate.WriteRefusal: the upstream's status and headers, so an
// OAuth-aware client starts its flow as it would against the upstream, in
// a JSON-RPC error with the caller's own id.
type Refusal struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *Refusal) Error() string { return fmt.Sprintf("upstream refused: HTTP %d", r.Status) }

func (r *Refusal) write(w http.ResponseWriter, callerID json.RawMessage) {
	authgate.WriteRefusal(w, callerID, r.Status, r.Header, r.Body)
}

// Upstream sends requests to the upstream on a caller's behalf
// (authgate.OnBehalf): with the caller's own headers (credentials,
// session, protocol version), its network identity and, on the modern
// wire, the caller's _meta, so the upstream answers exactly what it would
// answer that caller.
type Upstream struct {
	// URL is the upstream MCP endpoint.
	URL *url.URL
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// MaxBytes bounds one reply; 0 means 32 MiB (a 16 MiB blob, base64).
	MaxBytes int
	// Credentials are the headers that carry a caller's credentials (the
	// sidecar's --auth-headers); nil means Authorization and Cookie. They
	// travel with every request made on a caller's behalf, and every cache
	// of what the upstream told one caller is keyed by them.
	Credentials []string
}

// defaultCredentials are the credential headers when none are configured.
var defaultCredentials = []string{"Authorization", "Cookie"}

// credentials returns the configured credential headers.
func (u *Upstream) credentials() []string {
	if len(u.Credentials) == 0 {
		return defaultCredentials
	}
	return u.Credentials
}

// Call sends method with params on the caller's behalf and returns the
// JSON-RPC message answering it: only a response or error carrying the
// request's own id is (authgate.ReadReply). A reply with an HTTP status
// other than 200 that is not a JSON-RPC error of the modern wire is a
// *Refusal.
func (u *Upstream) Call(r *http.Request, caller rewrite.Message, method string, params map[string]json.RawMessage) (rewrite.Message, error) {
	ob := authgate.OnBehalf{Upstream: u.URL, Caller: r, CallerMsg: caller, Credentials: u.credentials(), Purpose: "call"}
	req, id, err := ob.NewRequest(method, params)
	if err != nil {
		return rewrite.Message{}, err
	}
	c := u.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		// No reply at all (refused, reset, timed out): the upstream is
		// unreachable, which callers may treat apart from a bad reply.
		return rewrite.Message{}, fmt.Errorf("upstream %s: %w: %w", method, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	limit := u.MaxBytes
	if limit <= 0 {
		limit = 32 << 20
	}
	if resp.StatusCode != http.StatusOK && !isJSONRPCError(resp) {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return rewrite.Message{}, &Refusal{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	m, err := authgate.ReadReply(resp.Header.Get("Content-Type"), resp.Body, id, limit)
	if err != nil {
		return rewrite.Message{}, fmt.Errorf("upstream %s: %w", method, err)
	}
	return m, nil
}

// isJSONRPCError reports whether a non-200 reply is a JSON-RPC error (the
// modern wire answers some of them with 4xx) rather than a refusal of the
// caller (401, 403, …).
func isJSONRPCError(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/json" && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound)
}

// UpstreamTools is the ToolSource that asks the upstream's tools/list on the
// caller's behalf and follows every page. What it learns is cached per
// authorization context (credentials and session) for TTL, never shared
// between callers.
type UpstreamTools struct {
	Upstream *Upstream
	// MaxPages bounds the pages followed; 0 means 100.
	MaxPages int
	// TTL is how long one caller's tools are reused; 0 means no cache.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]toolsEntry
}

type toolsEntry struct {
	tools   map[string]json.RawMessage
	expires time.Time
}

// maxToolsEntries bounds the callers whose tools are cached at once.
const maxToolsEntries = 1024

// Tools implements ToolSource.
func (u *UpstreamTools) Tools(r *http.Request, msg rewrite.Message) (map[string]json.RawMessage, error) {
	if u.TTL <= 0 {
		return u.fetch(r, msg)
	}
	now := time.Now
	if u.Now != nil {
		now = u.Now
	}
	key := callerKey(r, slices.Concat(u.Upstream.credentials(), []string{"Mcp-Session-Id", "Mcp-Protocol-Version"})...)
	u.mu.Lock()
	e, ok := u.cache[key]
	u.mu.Unlock()
	if ok && now().Before(e.expires) {
		return e.tools, nil
	}
	tools, err := u.fetch(r, msg)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	if u.cache == nil || len(u.cache) >= maxToolsEntries {
		u.cache = map[string]toolsEntry{}
	}
	u.cache[key] = toolsEntry{tools: tools, expires: now().Add(u.TTL)}
	u.mu.Unlock()
	return tools, nil
}

// fetch reads every page of the upstream's tools/list for this caller.
func (u *UpstreamTools) fetch(r *http.Request, msg rewrite.Message) (map[string]json.RawMessage, error) {
	maxPages := u.MaxPages
	if maxPages <= 0 {
		maxPages = 100
	}
	out := map[string]json.RawMessage{}
	cursor := ""
	for range maxPages {
		params := map[string]json.RawMessage{}
		if cursor != "" {
			params["cursor"] = mustJSON(cursor)
		}
		m, err := u.Upstream.Call(r, msg, "tools/list", params)
		if err != nil {
			return nil, err
		}
		if m.Kind != rewrite.KindResponse {
			return nil, fmt.Errorf("upstream tools/list failed: %s", m.Error)
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(m.Result, &page); err != nil {
			return nil, fmt.Errorf("decode upstream tools/list: %w", err)
		}
		for _, t := range page.Tools {
			var named struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(t, &named) == nil && named.Name != "" {
				if _, dup := out[named.Name]; !dup {
					out[named.Name] = t
				}
			}
		}
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("upstream tools/list: more than %d pages", maxPages)
}
