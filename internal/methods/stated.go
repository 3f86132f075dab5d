package methods

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// The sidecar states a skill file's size in three places: its skills/list
// and skills/get entries, its own resources/list entries and its
// resources/directory/read entries. For a file the upstream serves itself
// all three state the served size (what the caller's resources/read
// returns), never the plugin folder's when they differ: the listings ask
// the overlay as skills/list does (the caller's discovery, and a read of a
// file whose bytes are not yet known, shared with any read under way). A
// file whose served bytes cannot be learned (the read failed) is listed
// without a size rather than with one that could be wrong. The MIME type
// stated is the catalog's, the same in both resource listings.
//
// resources/list holds each URI once: a catalog URI the upstream lists
// itself is the upstream's entry, and the sidecar appends its own entries
// only for the rest. Which URIs the upstream lists, on any of its pages,
// is what the caller's discovery learned (its listing, cached for the
// upstream-files TTL); the URIs of the page being edited are left out too,
// whatever the discovery saw.

// ownResources returns the sidecar's resources/list entries for r's
// caller, in URI order: the catalog's files but those the upstream lists
// itself (by the caller's discovery, and those in onPage), the page after
// last (has: a cursor) with served sizes for the files the upstream serves.
func (h *Handler) ownResources(r *http.Request, caller rewrite.Message, v *view, onPage map[string]bool, last string, has bool) ([]string, []json.RawMessage) {
	o := h.opts.Overlay
	if o == nil || v.snap == nil {
		return dropListed(v, nil, onPage)
	}
	l := o.ListingFor(r, caller, v.snap, h.catalogOutlivesUpstream())
	if l == nil {
		return dropListed(v, nil, onPage)
	}
	uris, entries := dropListed(v, l, onPage)
	from, to, _ := page(uris, last, has, h.opts.PageSize)
	var files []*catalog.File
	for _, u := range uris[from:to] {
		if l.Serves(u) {
			f, _ := v.snap.File(u)
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return uris, entries
	}
	return uris, statedEntries(v, l, uris, entries, files)
}

// dropListed is the catalog's resources without the URIs the upstream
// lists (set, when known) and those in onPage; the view's own slices when
// none is left out.
func dropListed(v *view, l *upstreamfiles.Listing, onPage map[string]bool) ([]string, []json.RawMessage) {
	if len(onPage) == 0 && (l == nil || !l.ListsAny()) {
		return v.resURIs, v.resEntries
	}
	uris := make([]string, 0, len(v.resURIs))
	entries := make([]json.RawMessage, 0, len(v.resURIs))
	for i, u := range v.resURIs {
		if onPage[u] {
			continue
		}
		if l != nil && l.Lists(u) {
			continue
		}
		uris, entries = append(uris, u), append(entries, v.resEntries[i])
	}
	return uris, entries
}

// statedEntries replaces, in a copy of entries, the entry of each of files
// (served by the upstream) with its served size, or none when unknown.
func statedEntries(v *view, l *upstreamfiles.Listing, uris []string, entries []json.RawMessage, files []*catalog.File) []json.RawMessage {
	over := l.Resolve(files)
	out := append([]json.RawMessage(nil), entries...)
	for _, f := range files {
		i := indexOf(uris, f.URI)
		if e, ok := statedEntry(v.snap, l, over, f); ok {
			out[i] = e
		}
	}
	return out
}

// statedEntry is the resources entry of a file the upstream serves by its
// listings: its served size (over), the plugin's file when the upstream
// answered not found (c's verdict), else no size; false: the catalog's own
// entry stands.
func statedEntry(snap *catalog.Snapshot, l *upstreamfiles.Listing, over map[string]upstreamfiles.Served, f *catalog.File) (json.RawMessage, bool) {
	if s, ok := over[f.URI]; ok {
		return encodeResourceSized(snap, f, &s.Size), true
	}
	if s, ok := l.Verdict(f.URI); ok && !s.Upstream {
		return nil, false
	}
	return encodeResourceSized(snap, f, nil), true
}

// encodeResourceSized is encodeResource with size in place of the
// catalog's (nil: none).
func encodeResourceSized(snap *catalog.Snapshot, f *catalog.File, size *int64) []byte {
	r := resource{URI: f.URI, Name: strings.TrimPrefix(f.URI, catalog.Scheme), MIMEType: f.MIMEType, Size: size}
	if sk, ok := snap.Skill(f.URI); ok {
		r.Name, r.Description = sk.Name, sk.Description
	}
	return mustJSON(r)
}

// pageURIs returns the uri of every entry of a resources/list result's
// resources array, read as the caller's client reads them: by the exact
// member names (not folded, as encoding/json matches a struct's fields),
// the last of duplicates counting. An entry without a string uri names
// none.
func pageURIs(result json.RawMessage) map[string]bool {
	raw, _ := rewrite.GetKey(result, []string{"resources"})
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	out := make(map[string]bool, len(entries))
	for _, e := range entries {
		if uri, ok := rewrite.GetString(e, "uri"); ok {
			out[uri] = true
		}
	}
	return out
}

// statedDirEntries gives the files of a directory page that the upstream
// serves their served sizes (stated.go), as skills/list states them.
func (h *Handler) statedDirEntries(r *http.Request, caller rewrite.Message, v *view, d *catalog.Dir, keys []string, entries []json.RawMessage, last string, has bool) []json.RawMessage {
	o := h.opts.Overlay
	if o == nil || v.snap == nil {
		return entries
	}
	l := o.ListingFor(r, caller, v.snap, h.catalogOutlivesUpstream())
	if l == nil {
		return entries
	}
	from, to, _ := page(keys, last, has, h.opts.PageSize)
	var files []*catalog.File
	var at []int
	for i := from; i < to; i++ {
		de := d.Entries[i]
		if de.IsDir || !l.Serves(de.URI) {
			continue
		}
		if f, ok := v.snap.File(de.URI); ok {
			files, at = append(files, f), append(at, i)
		}
	}
	if len(files) == 0 {
		return entries
	}
	over := l.Resolve(files)
	out := append([]json.RawMessage(nil), entries...)
	for k, f := range files {
		de := d.Entries[at[k]]
		if s, ok := over[f.URI]; ok {
			de.Size = s.Size
			out[at[k]] = encodeDirEntry(de)
		} else if s, ok := l.Verdict(f.URI); !ok || s.Upstream {
			out[at[k]] = encodeDirEntryUnsized(de)
		}
	}
	return out
}
