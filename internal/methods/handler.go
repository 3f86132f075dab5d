package methods

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// Defaults for Options fields left zero.
const (
	DefaultPageSize   = 100
	DefaultCacheScope = "private"
)

// Options configure a Handler. The zero value serves an empty catalog.
type Options struct {
	// Snapshot returns the catalog to serve; nil, or a nil snapshot, serves
	// no skills and no agents (both extensions still answer).
	Snapshot func() *catalog.Snapshot
	// PageSize is the page length of every listing; 0 means DefaultPageSize.
	PageSize int
	// TTLMs is the ttlMs of cacheable results (SEP-2549): 0 means
	// immediately stale.
	TTLMs int64
	// CacheScope is "private" or "public"; "" means DefaultCacheScope.
	CacheScope string
	// Tools fetches the upstream's tools for agents/get; nil means an agent
	// that names tools cannot be served (-32603, invalid_agent_definition).
	Tools ToolSource
	// DropUnknownTools leaves out of agents/get the tool names the upstream
	// does not offer instead of failing: agent files written for Claude Code
	// often name host tools such as Read or Bash.
	DropUnknownTools bool
	// Gate, when set, admits the caller before the sidecar answers anything
	// itself; nil admits everyone (for upstreams without auth).
	Gate Gate
	// Overlay, when set, lets the upstream's own bytes win for the catalog
	// URIs it serves itself; nil serves every catalog file from the plugin
	// folder.
	Overlay *upstreamfiles.Overlay
	// Subscriptions, when set, records a legacy session's
	// resources/subscribe and resources/unsubscribe of the skill URIs the
	// sidecar serves itself (subscribe.go), so that a change of one sends
	// notifications/resources/updated to that session (package notify).
	// Nil leaves those requests to the upstream, as any other.
	Subscriptions Subscriptions
	// Callers says whose place of Subscriptions' share a subscription
	// takes (package caller); nil knows every caller by its address.
	Callers *caller.Resolver
	// Serves, when set, reports whether the sidecar answers its own methods
	// on the modern (true) or legacy (false) era: the upstream speaks that
	// era, or the era bridge makes it so. A request of an era it does not
	// serve is left to the upstream, which refuses it as it refuses the
	// rest of that era. Nil serves both.
	Serves func(modern bool) bool
	// HostCompat adds prompts and tools for hosts that do not speak the
	// Skills extension (hostcompat.go); the zero value adds none.
	HostCompat HostCompat
	// ServerName and ServerVersion fill _meta serverInfo on modern results;
	// empty means "skills-sidecar" and "dev".
	ServerName, ServerVersion string
}

// Gate admits callers. Admit returns nil when the sidecar may answer msg
// for the caller of r, and otherwise the reply the caller gets instead (see
// reply.Reply.Err); it writes nothing.
type Gate interface {
	Admit(r *http.Request, msg rewrite.Message) error
}

// Handler answers the methods the sidecar owns. It implements proxy.Local.
type Handler struct {
	opts     Options
	cache    string // the encoded cache fields: ,"ttlMs":N,"cacheScope":"…"
	metaInfo string // the encoded _meta member with serverInfo
	view     atomic.Pointer[view]
}

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.CacheScope == "" {
		opts.CacheScope = DefaultCacheScope
	}
	if opts.ServerName == "" {
		opts.ServerName = "skills-sidecar"
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "dev"
	}
	h := &Handler{opts: opts}
	h.cache = `,"ttlMs":` + strconv.FormatInt(opts.TTLMs, 10) + `,"cacheScope":` + quote(opts.CacheScope)
	h.metaInfo = `,"_meta":{"` + metaServerInfo + `":` + string(mustJSON(map[string]string{"name": opts.ServerName, "version": opts.ServerVersion})) + `}`
	return h
}

// current returns the view of the snapshot being served, building it once
// per snapshot.
func (h *Handler) current() *view {
	var snap *catalog.Snapshot
	if h.opts.Snapshot != nil {
		snap = h.opts.Snapshot()
	}
	if v := h.view.Load(); v != nil && v.snap == snap {
		return v
	}
	v := newView(snap)
	if h.opts.HostCompat.on() {
		v.compat = newCompatView(snap, h.opts.HostCompat)
	}
	h.view.Store(v)
	return v
}

// ServeLocal implements proxy.Local: it returns the answer and true when
// the sidecar owns the request, which the proxy writes.
func (h *Handler) ServeLocal(r *http.Request, msg rewrite.Message) (reply.Reply, bool) {
	v := h.current()
	var uri string // of a resources/* read, parsed once for routing and answer
	switch msg.Method {
	case "skills/list", "skills/get", "agents/list", "agents/get":
	case "resources/read":
		uri, _ = paramString(msg.Params, "uri")
		if !h.ownsURI(v, uri) || h.upstreamServes(r, msg, v, uri) {
			return reply.Reply{}, false
		}
	case "resources/directory/read":
		// A uri that is missing or not a string is no URI of the
		// upstream's either: while the sidecar serves skills (and so
		// the method it declares), it refuses those params itself, where
		// an upstream without the method would say it does not exist.
		var ok bool
		uri, ok = paramString(msg.Params, "uri")
		if ok && !h.ownsURI(v, uri) || !ok && len(v.skillURIs) == 0 {
			return reply.Reply{}, false
		}
	case "resources/subscribe", "resources/unsubscribe":
		uri, _ = paramString(msg.Params, "uri")
		if !h.ownsSubscription(r, msg, v, uri) || h.upstreamServes(r, msg, v, uri) {
			return reply.Reply{}, false
		}
	case "resources/list":
		c, _ := paramString(msg.Params, "cursor")
		if !strings.HasPrefix(c, cursorResources) {
			return reply.Reply{}, false // the upstream's pages come first; EditReply appends ours
		}
	case "prompts/list":
		c, _ := paramString(msg.Params, "cursor")
		if v.compat == nil || !strings.HasPrefix(c, cursorPrompts) {
			return reply.Reply{}, false // as resources/list
		}
	case "prompts/get", "tools/call":
		// Only the sidecar's own names (hostcompat.go); every other
		// call is the upstream's, untouched.
		if !h.ownsCompat(r, msg, v) {
			return reply.Reply{}, false
		}
	default:
		return reply.Reply{}, false
	}
	if h.opts.Serves != nil && !h.opts.Serves(wire.ClaimsModern(r.Header, msg.Params)) {
		return reply.Reply{}, false
	}
	e, eerr := checkEra(r.Header, msg) // pure; its error is given after the gate's
	if h.opts.Gate != nil {
		// The discovery a listing of a new context needs starts before
		// the gate is asked, and gives its verdict (internal/upstreamfiles/discovery.go, "Early
		// discovery").
		var pre *upstreamfiles.Early
		var running <-chan struct{}
		if eerr == nil && h.opts.Overlay != nil && v.snap != nil && (msg.Method == "skills/list" || msg.Method == "skills/get") {
			pre, running = h.opts.Overlay.StartDiscovery(r, msg, v.snap, h.catalogOutlivesUpstream(), func() []*catalog.File { return h.pageFiles(v, msg) })
		}
		if running != nil {
			// The context's discovery is another request's: its first
			// page may admit this caller too (the same credentials).
			select {
			case <-running:
			case <-r.Context().Done():
			}
		}
		// Its first listing page may admit the caller (Overlay.Witness:
		// the gate has counted and cached that verdict, so it is not
		// asked again). The upstream's refusal of that page is the
		// answer.
		admitted, ref := pre.Listed(r.Context())
		if ref != nil {
			pre.Withdraw()
			return reply.Reply{Err: ref}, true
		}
		if !admitted {
			if err := h.opts.Gate.Admit(r, msg); err != nil {
				pre.Withdraw()
				return reply.Reply{Err: err}, true
			}
		}
		if pre != nil {
			defer pre.End()
			r = pre.Own(r)
		}
	}
	if eerr != nil {
		return reply.Reply{Err: eerr}, true
	}
	if msg.Method == "resources/read" {
		var f *catalog.File
		if v.snap != nil {
			f, _ = v.snap.File(uri)
		}
		if f == nil {
			return reply.Reply{Err: notFound(e, uri)}, true
		}
		return reply.Reply{Body: h.readResult(v, e, uri, f)}, true
	}
	result, err := h.answer(v, e, msg, r, uri)
	return reply.Reply{Result: result, Err: err}, true
}

// answer computes the result of a method ServeLocal took on. A plain
// switch, not a table of method values: those would cost an allocation or
// two per request.
func (h *Handler) answer(v *view, e era, msg rewrite.Message, r *http.Request, uri string) ([]byte, error) {
	switch msg.Method {
	case "skills/list":
		return h.skillsList(v, e, msg, r)
	case "skills/get":
		return h.skillsGet(v, e, msg, r)
	case "agents/list":
		return h.agentsList(v, e, msg)
	case "agents/get":
		return h.agentsGet(v, e, msg, r)
	case "resources/directory/read":
		return h.directoryRead(v, e, msg, r, uri)
	case "resources/subscribe", "resources/unsubscribe":
		return h.subscribe(msg, r, uri)
	case "prompts/list":
		return h.promptsListLocal(v, e, msg, r)
	case "prompts/get":
		return h.promptGet(v, e, msg, r)
	case "tools/call":
		return h.toolCall(v, e, msg, r)
	default: // resources/list, with one of the sidecar's cursors (resources/read is ServeLocal's)
		return h.resourcesListLocal(r, v, e, msg)
	}
}

// ownsURI reports whether a resources/* URI is the sidecar's: any skill://
// URI while the sidecar serves a catalog with skills, so an unknown one is
// answered as not found (SEP-2640's codes) rather than forwarded. With no
// skills the sidecar claims nothing: an upstream that serves skill://
// resources of its own stays reachable through the sidecar, untouched.
// OwnsURI reports whether uri is a skill URI the sidecar answers for, as
// ownsURI judges it against the current catalog: the proxy honours a
// subscriptions/listen filter's resourceSubscriptions entry by it.
func (h *Handler) OwnsURI(uri string) bool { return h.ownsURI(h.current(), uri) }

func (h *Handler) ownsURI(v *view, uri string) bool {
	return len(v.skillURIs) > 0 && strings.HasPrefix(uri, catalog.Scheme)
}

// finish closes a result object: resultType, and on cacheable results the
// cache fields, and on modern requests _meta serverInfo.
func (h *Handler) finish(b []byte, e era, cacheable bool) []byte {
	b = append(b, `,"resultType":"complete"`...)
	if cacheable {
		b = append(b, h.cache...)
	}
	if e.modern {
		b = append(b, h.metaInfo...)
	}
	return append(b, '}')
}

// mergeCache gives a merged modern listing (the upstream's last page of
// resources/list, prompts/list or tools/list with the sidecar's entries
// appended) the stricter of both sides' cache fields: the lower ttlMs, and
// private when either side is.
func (h *Handler) mergeCache(out []byte) []byte {
	if raw, ok := rewrite.GetKey(out, []string{"result", "ttlMs"}); ok {
		var theirs int64
		if json.Unmarshal(raw, &theirs) == nil && h.opts.TTLMs < theirs {
			if o, err := rewrite.SetKey(out, []string{"result", "ttlMs"}, mustJSON(h.opts.TTLMs)); err == nil {
				out = o
			}
		}
	}
	result, _ := rewrite.GetKey(out, []string{"result"})
	if s, ok := rewrite.GetString(result, "cacheScope"); ok && s != "private" && h.opts.CacheScope == "private" {
		if o, err := rewrite.SetKey(out, []string{"result", "cacheScope"}, json.RawMessage(`"private"`)); err == nil {
			out = o
		}
	}
	return out
}

func invalidParams(msg string) *reply.Error {
	return &reply.Error{Status: http.StatusOK, Code: reply.CodeInvalidParams, Message: msg}
}

// cursorParam reads params.cursor: absent is the first page; a cursor that
// is not a string or not one of ours is -32602.
func cursorParam(msg rewrite.Message, kind string) (last string, has bool, err *reply.Error) {
	raw, ok := rewrite.GetKey(msg.Params, []string{"cursor"})
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	c, ok := rewrite.GetString(msg.Params, "cursor")
	if !ok {
		return "", false, invalidParams("invalid cursor: not a string")
	}
	last, ok = parseCursor(kind, c)
	if !ok {
		return "", false, invalidParams("invalid cursor " + quote(c))
	}
	return last, true, nil
}

// listPage encodes `"key":[entries…]` for the page after the cursor, and
// nextCursor when more follow. A nil entry is left out (a skill the overlay
// withholds); the page still ends where it would have.
func listPage(b []byte, key string, keys []string, entries []json.RawMessage, last string, has bool, size int, kind string) []byte {
	from, to, more := page(keys, last, has, size)
	n := 64 + len(key)
	for _, e := range entries[from:to] {
		n += len(e) + 1
	}
	b = slices.Grow(b, n+256) // the page in one allocation, with room for the result's tail
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":[`...)
	first := true
	for i := from; i < to; i++ {
		if entries[i] == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, entries[i]...)
	}
	b = append(b, ']')
	if more {
		b = append(b, `,"nextCursor":`...)
		b = appendCursor(b, kind, keys[to-1])
	}
	return b
}

func (h *Handler) skillsList(v *view, e era, msg rewrite.Message, r *http.Request) ([]byte, error) {
	last, has, err := cursorParam(msg, cursorSkills)
	if err != nil {
		return nil, err
	}
	entries := v.skillEntries
	if h.opts.Overlay != nil {
		from, to, _ := page(v.skillURIs, last, has, h.opts.PageSize)
		served, changed, _, oerr := h.overlayEntries(r, msg, v, from, to, h.catalogOutlivesUpstream())
		if oerr != nil {
			return nil, oerr
		}
		if changed {
			entries = make([]json.RawMessage, len(v.skillEntries))
			copy(entries[from:to], served)
		}
	}
	b := make([]byte, 0, 4096)
	b = append(b, '{')
	b = listPage(b, "skills", v.skillURIs, entries, last, has, h.opts.PageSize, cursorSkills)
	return h.finish(b, e, true), nil
}

// pageFiles are the files of the skills a skills/list or skills/get
// answers (nil when its params are wrong): what its early discovery may
// guess reads of.
func (h *Handler) pageFiles(v *view, msg rewrite.Message) []*catalog.File {
	from, to := 0, 0
	if msg.Method == "skills/get" {
		uri, _ := paramString(msg.Params, "uri")
		if from = indexOf(v.skillURIs, uri); from < 0 {
			return nil
		}
		to = from + 1
	} else {
		last, has, err := cursorParam(msg, cursorSkills)
		if err != nil {
			return nil
		}
		from, to, _ = page(v.skillURIs, last, has, h.opts.PageSize)
	}
	var files []*catalog.File
	for i := from; i < to; i++ {
		if sk, ok := v.snap.Skill(v.skillURIs[i]); ok {
			files = append(files, sk.Files...)
		}
	}
	return files
}

func (h *Handler) skillsGet(v *view, e era, msg rewrite.Message, r *http.Request) ([]byte, error) {
	uri, ok := paramString(msg.Params, "uri")
	if !ok {
		return nil, invalidParams("skills/get needs params.uri, a string")
	}
	i := indexOf(v.skillURIs, uri)
	if i < 0 {
		return nil, invalidParams(skillGetProblem(v.snap, uri))
	}
	entry := v.skillEntries[i]
	if h.opts.Overlay != nil {
		served, _, withheld, oerr := h.overlayEntries(r, msg, v, i, i+1, h.catalogOutlivesUpstream())
		if oerr != nil {
			return nil, oerr
		}
		if served[0] == nil {
			// Not published, as skills/list leaves it out (servedFrontmatter).
			return nil, invalidParams("skill not found: " + quote(uri) + " is not published; the upstream's SKILL.md: " + withheld[0])
		}
		entry = served[0]
	}
	b := make([]byte, 0, len(entry)+128)
	b = append(b, `{"skill":`...)
	b = append(b, entry...)
	return h.finish(b, e, true), nil
}

func skillGetProblem(snap *catalog.Snapshot, uri string) string {
	if snap != nil {
		if _, ok := snap.File(uri); ok {
			return "skill not found: " + quote(uri) + " is a skill file, not a SKILL.md URI"
		}
		if _, ok := snap.Dir(uri); ok {
			return "skill not found: " + quote(uri) + " is a directory, not a SKILL.md URI"
		}
	}
	return "skill not found: " + quote(uri)
}

func indexOf(sorted []string, key string) int {
	lo, hi := 0, len(sorted)
	for lo < hi {
		m := (lo + hi) / 2
		if sorted[m] < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(sorted) && sorted[lo] == key {
		return lo
	}
	return -1
}

func (h *Handler) directoryRead(v *view, e era, msg rewrite.Message, r *http.Request, uri string) ([]byte, error) {
	if _, ok := paramString(msg.Params, "uri"); !ok {
		return nil, invalidParams("resources/directory/read needs params.uri, a string")
	}
	var d *catalog.Dir
	if v.snap != nil {
		d, _ = v.snap.Dir(uri)
	}
	if d == nil {
		if v.snap != nil {
			if _, isFile := v.snap.File(uri); isFile {
				return nil, invalidParams("not a directory: " + quote(uri) + " is a file")
			}
		}
		return nil, invalidParams("directory not found: " + quote(uri))
	}
	last, has, err := cursorParam(msg, cursorDir)
	if err != nil {
		return nil, err
	}
	// The pages are keyed on the children's URIs (in name order, as they
	// share the directory's prefix), so a cursor names its directory: one
	// of another directory is refused, never taken as a place in this one.
	if rest, ok := strings.CutPrefix(last, d.URI+"/"); has && (!ok || rest == "" || strings.Contains(rest, "/")) {
		return nil, invalidParams("invalid cursor: it does not page the directory " + quote(uri))
	}
	keys := make([]string, len(d.Entries))
	entries := make([]json.RawMessage, len(d.Entries))
	for i, de := range d.Entries {
		keys[i], entries[i] = de.URI, encodeDirEntry(de)
	}
	entries = h.statedDirEntries(r, msg, v, d, keys, entries, last, has)
	b := make([]byte, 0, 1024)
	b = append(b, '{')
	b = listPage(b, "resources", keys, entries, last, has, h.opts.PageSize, cursorDir)
	return h.finish(b, e, false), nil
}

// upstreamServes reports whether a read of catalog URI uri must go to the
// upstream because the upstream serves that URI itself for this caller, as
// its listings say (internal/upstreamfiles/discovery.go). It reads nothing: the forwarded read is
// hashed on its way to the caller (EditReply).
func (h *Handler) upstreamServes(r *http.Request, msg rewrite.Message, v *view, uri string) bool {
	if h.opts.Overlay == nil || v.snap == nil {
		return false
	}
	if _, ok := v.snap.File(uri); !ok {
		return false
	}
	up, err := h.opts.Overlay.ServesURI(r, msg, v.snap, uri, h.catalogOutlivesUpstream())
	if err != nil {
		return true // let the upstream answer the caller itself
	}
	return up
}

// catalogOutlivesUpstream reports whether the sidecar's own answers go on
// while the upstream is unreachable: only without a gate (--auth-gate none),
// where no answer depends on the upstream admitting the caller. Files whose
// verdict is unknown are then the plugin folder's, for the listing and for
// reads alike, until the upstream answers again. With a gate the gate itself
// fails closed first (502, upstream_unreachable).
func (h *Handler) catalogOutlivesUpstream() bool { return h.opts.Gate == nil }
