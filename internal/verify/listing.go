package verify

import (
	"context"
	"encoding/json"
	"fmt"
)

// listed is one item of a paginated listing with the page it came on.
type listed struct {
	raw  json.RawMessage
	page int
}

// listSpec describes one paginated listing to follow.
type listSpec struct {
	method   string           // e.g. "skills/list"
	params   map[string]any   // extra params (directory reads carry uri)
	itemsKey string           // e.g. "skills"
	key      func(any) string // identity of an item for duplicate checks
	maxItems int              // stop (with a warning) after this many
	cache    bool             // modern results must carry the cache fields
	checks   *checks          // where the listing's checks go
	prefix   string           // check-name prefix, e.g. "skills.list"
}

// listAll follows every page of a listing: no repeated cursor, no entry on
// two pages, at most MaxPages pages. It returns the first occurrence of each
// item and whether the listing was read to its end.
func (v *verifier) listAll(ctx context.Context, s listSpec) (items []listed, complete bool) {
	seenCursor := map[string]bool{}
	seenKey := map[string]int{}
	cursor := ""
	cs := s.checks
	for page := 1; ; page++ {
		if page > v.opts.MaxPages {
			cs.fail(s.prefix+".pagination", "listing did not end within %d pages (cursor never ends)", v.opts.MaxPages)
			return items, false
		}
		params := map[string]any{}
		for k, val := range s.params {
			params[k] = val
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := v.call(ctx, s.method, params)
		if err != nil {
			cs.fail(s.prefix, "%s page %d: %v", s.method, page, err)
			return items, false
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(res, &body); err != nil {
			cs.fail(s.prefix, "%s page %d result is not an object", s.method, page)
			return items, false
		}
		var pageItems []json.RawMessage
		if err := json.Unmarshal(body[s.itemsKey], &pageItems); err != nil || body[s.itemsKey] == nil {
			cs.fail(s.prefix, "%s page %d: %q is not an array", s.method, page, s.itemsKey)
			return items, false
		}
		if s.cache && v.c.modern {
			if reason := cacheProblem(res); reason != "" {
				cs.fail(s.prefix+".cache", "page %d: %s", page, reason)
			} else {
				cs.ok(s.prefix+".cache", "every page carries resultType, ttlMs and cacheScope")
			}
		}
		for _, raw := range pageItems {
			val, err := decodeJSON(raw)
			if err != nil {
				cs.fail(s.prefix, "page %d: item is not JSON: %v", page, err)
				continue
			}
			k := s.key(val)
			if first, dup := seenKey[k]; dup && k != "" {
				if first != page {
					cs.fail(s.prefix+".pagination", "entry %q is on pages %d and %d (an entry is never split across pages)", k, first, page)
				} else {
					cs.fail(s.prefix+".unique", "entry %q listed twice on page %d", k, page)
				}
				continue
			}
			seenKey[k] = page
			if len(items) >= s.maxItems {
				cs.warn(s.prefix+".bound", "stopped after %d entries (--max-skills): the rest is not checked", s.maxItems)
				return items, false
			}
			items = append(items, listed{raw: raw, page: page})
		}
		next, hasNext := body["nextCursor"]
		if !hasNext || string(next) == "null" {
			cs.ok(s.prefix+".pagination", fmt.Sprintf("%d page(s), %d entries", page, len(items)))
			return items, true
		}
		var nc string
		if err := json.Unmarshal(next, &nc); err != nil {
			cs.fail(s.prefix+".pagination", "page %d: nextCursor is not a string", page)
			return items, false
		}
		if nc == "" {
			cs.fail(s.prefix+".pagination", "page %d: nextCursor is empty (omit it on the last page)", page)
			return items, false
		}
		if seenCursor[nc] {
			cs.fail(s.prefix+".pagination", "page %d repeats cursor %q", page, truncate(nc, 60))
			return items, false
		}
		seenCursor[nc] = true
		cursor = nc
	}
}
