package notify

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxStreams           = 4096
	DefaultMaxStreamsPerSession = 8
	DefaultMaxSessions          = 4096
	DefaultMaxSubscriptions     = 256
	// DefaultMaxSubscriptionsAll bounds the subscriptions of every
	// session together, as the era bridge's legacy front bounds those of
	// its minted sessions: with MaxSubscriptionURI, at most 32 MiB of URIs
	// held, where the sessions' bounds alone allowed a million
	// subscriptions.
	DefaultMaxSubscriptionsAll = 4096
	// MaxPendingURIs bounds the resources/updated URIs waiting on one stream.
	MaxPendingURIs = 64
	// MaxSubscriptionURI bounds a subscribed URI, in bytes, here and in
	// the era bridge (its subscriptions are kept by this same bound): a
	// subscription is held for as long as its session, so its URI is
	// memory held that long, and without a bound one session's
	// MaxSubscriptions could each be a whole request body.
	MaxSubscriptionURI = 8 << 10
)

// The hub's tables shared per caller (package caller): their data.table
// and metric label.
const (
	// TableSubscriptions is the subscriptions of all sessions together
	// (MaxSubscriptionsAll).
	TableSubscriptions = "notify_subscriptions"
	// TableStreams is the streams registered (MaxStreams).
	TableStreams = "notify_streams"
	// TableSessionSubscriptions is the bound of one session's own
	// subscriptions (MaxSubscriptions), which no caller shares: its
	// refusal is a full table's (caller.SessionBound).
	TableSessionSubscriptions = "notify_session_subscriptions"
	// TableSessionStreams is the bound of one legacy session's own
	// streams (MaxStreamsPerSession), refused as TableSessionSubscriptions.
	TableSessionStreams = "notify_session_streams"
)

// ErrLimit reports a subscription past Options.MaxSessions, or past
// Options.MaxSubscriptionsAll for a subscriber of no caller. A subscriber
// past its own share of MaxSubscriptionsAll, or with it full, and a
// session past its MaxSubscriptions get a *caller.Refusal instead.
var ErrLimit = errors.New("notify: subscription limit reached")

// ErrURITooLong reports a subscription to a URI over MaxSubscriptionURI.
var ErrURITooLong = errors.New("notify: subscribed URI too long")

// Options bound a Hub. The zero value uses the defaults.
type Options struct {
	// MaxStreams bounds the streams registered at once; 0 means
	// DefaultMaxStreams.
	MaxStreams int
	// MaxStreamsPerSession bounds one legacy session's streams; 0 means
	// DefaultMaxStreamsPerSession.
	MaxStreamsPerSession int
	// MaxSessions bounds the legacy sessions holding subscriptions; 0 means
	// DefaultMaxSessions.
	MaxSessions int
	// MaxSubscriptions bounds one session's subscribed URIs; 0 means
	// DefaultMaxSubscriptions.
	MaxSubscriptions int
	// MaxSubscriptionsAll bounds the subscribed URIs of all sessions
	// together; 0 means DefaultMaxSubscriptionsAll.
	MaxSubscriptionsAll int
	// SharePercent is the part of MaxSubscriptionsAll and of MaxStreams
	// one caller may hold (caller.Share); 0 means
	// caller.DefaultSharePercent. The zero caller.ID (a caller nobody
	// resolved) is held to no share, only to the bounds.
	SharePercent int
	// Metrics counts the refusals of those two tables (caller.Table);
	// nil counts nothing.
	Metrics *metrics.Metrics
	// Count, when set, is told of every notification written to a stream
	// (coalesced false) and of every one folded into one already pending
	// on a slow stream (coalesced true), by method. It is called with the
	// hub's or a stream's lock held and must not block (a counter).
	Count func(method string, coalesced bool)
}

// Hub is the registry of open streams and legacy subscriptions. The zero
// value is not usable; create one with New. A nil *Hub sends nothing and
// opens no stream.
type Hub struct {
	opts Options
	// subShares and streamShares count the places each caller holds of
	// the subscriptions of all sessions and of the streams. Their lock is
	// taken under h.mu, never the other way round.
	subShares, streamShares *caller.Table

	mu         sync.Mutex
	streams    map[*Stream]struct{}
	perSession map[string]int
	subs       map[string]map[string]caller.ID // session → subscribed URI → who subscribed it
	total      int                             // the URIs in subs, all sessions'
	// used orders the sessions with subscriptions by their last use (a
	// subscription, a stream ending), for eviction when MaxSessions hold
	// some: a session that ends without DELETE (most clients never send
	// one; an upstream may expire it) leaves its subscriptions behind.
	used map[string]uint64
	tick uint64
}

// New returns a Hub with opts' bounds.
func New(opts Options) *Hub {
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxStreamsPerSession <= 0 {
		opts.MaxStreamsPerSession = DefaultMaxStreamsPerSession
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSubscriptions <= 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.MaxSubscriptionsAll <= 0 {
		opts.MaxSubscriptionsAll = DefaultMaxSubscriptionsAll
	}
	opts.Metrics.CallerRefusalTable(TableSessionSubscriptions) // at 0 until one
	opts.Metrics.CallerRefusalTable(TableSessionStreams)
	return &Hub{opts: opts, streams: map[*Stream]struct{}{}, perSession: map[string]int{}, subs: map[string]map[string]caller.ID{}, used: map[string]uint64{},
		subShares: caller.NewTable(caller.TableOptions{Name: TableSubscriptions, Cap: opts.MaxSubscriptionsAll,
			SharePercent: opts.SharePercent, Metrics: opts.Metrics}),
		streamShares: caller.NewTable(caller.TableOptions{Name: TableStreams, Cap: opts.MaxStreams,
			SharePercent: opts.SharePercent, Metrics: opts.Metrics})}
}

// Filter says what one stream receives.
type Filter struct {
	// Session is a legacy stream's Mcp-Session-Id: it receives
	// resources/updated for that session's subscriptions. "" for a modern
	// stream.
	Session string
	// ResourcesListChanged and AgentsListChanged ask for those
	// notifications (a legacy GET stream asks for both).
	ResourcesListChanged, AgentsListChanged bool
	// PromptsListChanged and ToolsListChanged ask for those notifications
	// when skills change (prompts also when agents do): the prompts and
	// tools host compatibility adds describe them. A legacy GET stream asks for them exactly when
	// the sidecar adds them.
	PromptsListChanged, ToolsListChanged bool
	// URIs are a modern stream's resourceSubscriptions the sidecar honours.
	URIs []string
	// SubscriptionID is a modern stream's listen request id, raw; nil for
	// a legacy stream. A modern stream receives nothing until MarkAcked.
	SubscriptionID json.RawMessage
	// Caller is who opened the stream: it takes a place of that caller's
	// share of MaxStreams. The zero ID is held to no share.
	Caller caller.ID
}

// Open registers a stream with filter f writing to w (flush, when not nil,
// is called after each write). It returns a nil stream and an error when
// the hub is nil or a bound is reached: MaxStreams and f.Caller's share of
// it are the notify_streams table's refusals, and a session's own
// MaxStreamsPerSession notify_session_streams', each a *caller.Refusal
// counted in the metrics, whose Reply a stream the sidecar serves alone
// answers; a nil hub, and MaxStreams for a stream of no caller, are
// ErrLimit. A relayed stream then goes on without the sidecar's
// notifications. The caller must Close the stream when it ends.
func (h *Hub) Open(f Filter, w io.Writer, flush func()) (*Stream, error) {
	if h == nil {
		return nil, ErrLimit
	}
	s := &Stream{hub: h, f: f, w: w, flush: flush, acked: f.SubscriptionID == nil}
	h.mu.Lock()
	defer h.mu.Unlock()
	if f.Session != "" && h.perSession[f.Session] >= h.opts.MaxStreamsPerSession {
		h.opts.Metrics.CallerRefusal(TableSessionStreams, true)
		return nil, caller.SessionBound(TableSessionStreams, h.opts.MaxStreamsPerSession, "streams")
	}
	// The table first, as Subscribe asks it: its cap is MaxStreams, so it
	// is the one that finds the streams full and counts the refusal. The
	// hub's own bound then holds the streams of no caller too.
	who := f.Caller != (caller.ID{})
	if who {
		if err := h.streamShares.Acquire(f.Caller, nil); err != nil {
			return nil, err
		}
	}
	if len(h.streams) >= h.opts.MaxStreams {
		if who {
			h.streamShares.Release(f.Caller)
		}
		return nil, ErrLimit
	}
	h.streams[s] = struct{}{}
	if f.Session != "" {
		h.perSession[f.Session]++
	}
	return s, nil
}

func (h *Hub) remove(s *Stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.streams[s]; !ok {
		return
	}
	delete(h.streams, s)
	if s.f.Caller != (caller.ID{}) {
		h.streamShares.Release(s.f.Caller)
	}
	if sid := s.f.Session; sid != "" {
		if h.perSession[sid]--; h.perSession[sid] <= 0 {
			delete(h.perSession, sid)
		}
		h.touch(sid)
	}
}

// touch marks sid's subscriptions used now; h.mu is held.
func (h *Hub) touch(sid string) {
	if _, ok := h.subs[sid]; ok {
		h.tick++
		h.used[sid] = h.tick
	}
}

// evictLocked drops the subscriptions of the least recently used session
// with no stream open (a live client has one, or receives nothing anyway
// until it opens one), never except, and, when own is set, one holding
// some of who's subscriptions; it reports whether there was one. h.mu is
// held.
func (h *Hub) evictLocked(except string, who caller.ID, own bool) bool {
	victim, oldest := "", uint64(0)
	for sid, set := range h.subs {
		if h.perSession[sid] > 0 || sid == except {
			continue
		}
		if own && !holds(set, who) {
			continue
		}
		if u := h.used[sid]; victim == "" || u < oldest {
			victim, oldest = sid, u
		}
	}
	if victim == "" {
		return false
	}
	h.forgetLocked(victim)
	return true
}

// holds reports whether who subscribed any of set.
func holds(set map[string]caller.ID, who caller.ID) bool {
	for _, id := range set {
		if id == who {
			return true
		}
	}
	return false
}

// forgetLocked drops every subscription of session sid, giving each
// subscriber's place back.
func (h *Hub) forgetLocked(sid string) {
	for _, who := range h.subs[sid] {
		h.release(who)
	}
	h.total -= len(h.subs[sid])
	delete(h.subs, sid)
	delete(h.used, sid)
}

// Streams returns how many streams are registered.
func (h *Hub) Streams() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}

// release gives back a place of who's share of the subscriptions.
func (h *Hub) release(who caller.ID) {
	if who != (caller.ID{}) {
		h.subShares.Release(who)
	}
}

// Subscribe records that legacy session sid subscribed (resources/subscribe)
// to uri, for caller who. When MaxSessions hold subscriptions, or
// MaxSubscriptionsAll are held, the least recently used session with no
// stream open (never sid) loses its subscriptions to make room; past the
// bounds (every such session streaming, or MaxSubscriptions for sid) it
// returns ErrLimit and records nothing. When who holds its share of
// MaxSubscriptionsAll, the least recently used such session of its own
// gives way, and with none it is refused: a *caller.Refusal (not Full),
// counted in the metrics. A uri over MaxSubscriptionURI is ErrURITooLong.
func (h *Hub) Subscribe(sid, uri string, who caller.ID) error {
	if h == nil {
		return ErrLimit
	}
	if len(uri) > MaxSubscriptionURI {
		return ErrURITooLong
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[sid]
	if _, ok := set[uri]; ok {
		h.touch(sid)
		return nil
	}
	if len(set) >= h.opts.MaxSubscriptions {
		h.opts.Metrics.CallerRefusal(TableSessionSubscriptions, true)
		return caller.SessionBound(TableSessionSubscriptions, h.opts.MaxSubscriptions, "subscriptions")
	}
	if who != (caller.ID{}) {
		// The share first: a caller at its own gives up its own places,
		// never another's. makeRoom runs here, with h.mu held. Its
		// refusal (over the share, or the table full) is the caller's.
		if err := h.subShares.Acquire(who, func(own bool) bool { return h.evictLocked(sid, who, own) }); err != nil {
			return err
		}
	}
	if set == nil && len(h.subs) >= h.opts.MaxSessions && !h.evictLocked(sid, who, false) {
		h.release(who)
		return ErrLimit
	}
	for h.total >= h.opts.MaxSubscriptionsAll {
		if !h.evictLocked(sid, who, false) {
			h.release(who)
			return ErrLimit
		}
	}
	if set == nil {
		set = map[string]caller.ID{}
		h.subs[sid] = set
	}
	set[uri] = who
	h.total++
	h.touch(sid)
	return nil
}

// Unsubscribe forgets one subscription; an unknown one is no error.
func (h *Hub) Unsubscribe(sid, uri string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if set := h.subs[sid]; set != nil {
		if who, ok := set[uri]; ok {
			delete(set, uri)
			h.total--
			h.release(who)
		}
		if len(set) == 0 {
			h.forgetLocked(sid)
		}
	}
}

// Forget drops every subscription of session sid (the session ended).
func (h *Hub) Forget(sid string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forgetLocked(sid)
}

// Publish sends what c calls for to every stream that asked for it. It
// never blocks and never writes: each stream's writer does, at its next
// event boundary. A c with nothing in it sends nothing.
func (h *Hub) Publish(c catalog.Changes) {
	if h == nil || !c.Any() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.streams {
		var uris []string
		if s.f.Session != "" {
			set := h.subs[s.f.Session]
			for _, u := range c.Files {
				if _, ok := set[u]; ok {
					uris = append(uris, u)
				}
			}
		} else {
			for _, u := range c.Files {
				if slices.Contains(s.f.URIs, u) {
					uris = append(uris, u)
				}
			}
		}
		var add lists
		for i, on := range [...]bool{c.Skills && s.f.ResourcesListChanged, c.Agents && s.f.AgentsListChanged,
			(c.Skills || c.Agents) && s.f.PromptsListChanged, c.Skills && s.f.ToolsListChanged} {
			if on {
				add |= 1 << i
			}
		}
		s.offer(add, uris)
	}
}
