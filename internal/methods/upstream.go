package methods

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// ToolSource returns the upstream's tools as this caller sees them, by name,
// each as the exact JSON object the upstream sent.
type ToolSource interface {
	Tools(r *http.Request, msg rewrite.Message) (map[string]json.RawMessage, error)
}

// UpstreamTools is the ToolSource that asks the upstream's tools/list on the
// caller's behalf and follows every page. What it learns is cached per
// authorization context (credentials and session) for TTL, never shared
// between callers. With List "prompts" it does the same for prompts/list
// (host compatibility's collision check, hostcompat.go).
type UpstreamTools struct {
	Upstream *onbehalf.Upstream
	// List is what is listed: "tools" (or "") or "prompts".
	List string
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
	k := onbehalf.CallerKey(r, slices.Concat(u.Upstream.CredentialHeaders(), []string{"Mcp-Session-Id", "Mcp-Protocol-Version"})...)
	key := string(k[:])
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
	list := u.List
	if list == "" {
		list = "tools"
	}
	out := map[string]json.RawMessage{}
	cursor := ""
	for range maxPages {
		params := map[string]json.RawMessage{}
		if cursor != "" {
			params["cursor"] = mustJSON(cursor)
		}
		m, err := u.Upstream.Call(r, msg, list+"/list", params)
		if err != nil {
			return nil, err
		}
		if m.Kind != rewrite.KindResponse {
			return nil, fmt.Errorf("upstream %s/list failed: %s", list, m.Error)
		}
		// Members are read by their exact names, the last of duplicates
		// counting, as the caller's client reads the same listing (not
		// folded, as encoding/json matches a struct's fields).
		var next string
		var items []json.RawMessage
		if !rewrite.IsObjectOrNull(m.Result) {
			return nil, fmt.Errorf("decode upstream %s/list: the result is not an object", list)
		}
		if raw, ok := rewrite.GetKey(m.Result, []string{"nextCursor"}); ok {
			if err := json.Unmarshal(raw, &next); err != nil {
				return nil, fmt.Errorf("decode upstream %s/list: %w", list, err)
			}
		}
		if raw, ok := rewrite.GetKey(m.Result, []string{list}); ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("decode upstream %s/list: %w", list, err)
			}
		}
		for _, t := range items {
			if name, ok := rewrite.GetString(t, "name"); ok && name != "" {
				if _, dup := out[name]; !dup {
					out[name] = t
				}
			}
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("upstream %s/list: more than %d pages", list, maxPages)
}
