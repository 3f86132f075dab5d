package upstreamfiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"golang.org/x/sync/semaphore"
)

// Upstream-served skill files (docs/design.md, decision 2). When the upstream
// itself serves a URI of the catalog, its bytes win: the sidecar serves
// nothing for that URI, forwards reads of it, and publishes the digest, size
// and (for SKILL.md) frontmatter of what the upstream actually returns. Who
// serves a URI is learned from the upstream's own listings, taken with the
// caller's credentials (discovery.go): a URI the upstream neither lists nor
// matches with a template is the plugin folder's and costs no request. What
// is learned is cached per authorization context (a hash of the credential
// headers), or once for everyone when the operator declares the upstream's
// content shared, until it expires, the upstream announces a change
// (ResourcesChanged) or a forwarded read shows different bytes. Without an
// auth gate, an upstream that cannot be reached leaves a verdict unknown
// rather than failing the answer: the plugin folder's file is published and
// served, and nothing is stored, so the verdict is learned once the
// upstream answers again.

// Served is what one URI looks like to one authorization context.
type Served struct {
	Upstream    bool // the upstream serves this URI; its bytes are below
	Digest      string
	Size        int64
	Frontmatter json.RawMessage // SKILL.md only
	// withheld, for a SKILL.md, is why its skill is not published: its
	// frontmatter has no reading every host shares (servedFrontmatter).
	Withheld string
}

// authContext caches the verdicts of one authorization context for one
// snapshot.
type authContext struct {
	snap    *catalog.Snapshot
	expires time.Time
	mu      sync.Mutex
	files   map[string]Served
	disc    *discovery            // the served set, learned or being learned
	reading map[string]*readClaim // files being read, by the request that claimed each
}

// Overlay decides who serves each catalog URI and what its served bytes
// are. The zero value is not usable; build it with NewOverlay.
type Overlay struct {
	up     *onbehalf.Upstream
	ttl    time.Duration
	shared bool
	now    func() time.Time

	mu       sync.Mutex
	contexts map[string]*authContext

	// Metrics, when set, records probes, mismatches and bytes hashed.
	Metrics *metrics.Metrics
	// Witness, when set, is given the HTTP status, answer and error of the
	// first resources/list page of every discovery, made with the caller's
	// headers: the auth gate admits the caller on a result
	// (authgate.Gate.Witness), so a new caller's first page costs no
	// separate probe. decides is false for a prefetch's discovery
	// (prefetch.go), whose request the sidecar does not answer itself: the
	// gate caches what it learns but counts no verdict. Set it before
	// serving.
	Witness func(r *http.Request, status int, answer rewrite.Message, err error, decides bool) bool

	// FrontmatterPortability is what happens to a skill whose served
	// SKILL.md has a plain scalar YAML 1.1 hosts read differently
	// (catalog.Ambiguity): catalog.PortabilitySkip ("" means skip)
	// withholds it, catalog.PortabilityWarn publishes it. The plugin
	// folder's copy is judged by the catalog under the same setting. Set it
	// before serving.
	FrontmatterPortability string
	// slots bounds the discoveries in flight (DefaultMaxDiscoveries);
	// prefetches the prefetches running (prefetch.go).
	slots      *semaphore.Weighted
	prefetches chan struct{}
	// resourcesCap is what the upstream declared of resources (capUnknown,
	// capResources, capNone).
	resourcesCap atomic.Int32

	// declared are the contexts whose legacy initialize declared the
	// skills extension, until their notifications/initialized (prefetch.go),
	// guarded by mu.
	declared map[string]time.Time

	// changes counts the notifications that the upstream's resources
	// changed (and Invalidate): a read that began before one is not
	// stored after it, nor is a guessed read used.
	changes atomic.Int64

	// hint is the last complete set a discovery learned, in any context:
	// the guess at what a new context is served (discovery.go, "Guessed
	// reads"). Forgotten with everything learned.
	hint atomic.Pointer[servedSet]

	// downUntil (Unix nanoseconds by now) is when the overlay may ask an
	// upstream it last found unreachable again; see unreachableBackoff.
	downUntil atomic.Int64
}

// maxContexts bounds the authorization contexts cached at once; past it the
// cache starts over (the cost is a re-probe, never a wrong answer).
const maxContexts = 4096

// NewOverlay returns an Overlay asking up. ttl is how long a verdict is
// trusted (0 means 60s); shared caches one set of verdicts for every caller.
func NewOverlay(up *onbehalf.Upstream, ttl time.Duration, shared bool) *Overlay {
	if ttl <= 0 {
		ttl = 60 * time.Second
	}
	return &Overlay{up: up, ttl: ttl, shared: shared, now: time.Now, contexts: map[string]*authContext{},
		slots: semaphore.NewWeighted(DefaultMaxDiscoveries), prefetches: make(chan struct{}, maxPrefetches)}
}

// Invalidate forgets every verdict and digest learned, so the next listing
// asks the upstream again. The proxy calls it when the upstream announces
// that its resources changed (notifications/resources/updated or
// list_changed passing through).
func (o *Overlay) Invalidate() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.changes.Add(1)
	clear(o.contexts)
	o.hint.Store(nil)
}

// ResourcesChanged forgets what a notification from the upstream says is
// stale; r is the request whose stream carried it. list_changed
// (notifications/resources/list_changed) drops everything the caller's
// authorization context learned, its served set included; updated
// (notifications/resources/updated) drops the verdict of that one URI, in
// every context: the bytes behind a URI changed for whoever reads it.
func (o *Overlay) ResourcesChanged(r *http.Request, method, uri string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.changes.Add(1)
	switch method {
	case "notifications/resources/list_changed":
		delete(o.contexts, o.authKey(r))
		o.hint.Store(nil)
	case "notifications/resources/updated":
		for _, c := range o.contexts {
			c.mu.Lock()
			delete(c.files, uri)
			c.mu.Unlock()
		}
	}
}

// authKey is the cache key of a caller: a hash of its credential headers
// and network identity (onbehalf.CallerKey).
func (o *Overlay) authKey(r *http.Request) string {
	if o.shared {
		return ""
	}
	return callerKey(r, o.up.CredentialHeaders()...)
}

// callerKey is onbehalf.CallerKey as a map key.
func callerKey(r *http.Request, names ...string) string {
	k := onbehalf.CallerKey(r, names...)
	return string(k[:])
}

func (o *Overlay) context(r *http.Request, snap *catalog.Snapshot) *authContext {
	return o.contextAt(o.authKey(r), snap)
}

// contextAt is context for a caller whose authKey is known.
func (o *Overlay) contextAt(key string, snap *catalog.Snapshot) *authContext {
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.contexts[key]
	if !c.current(snap, now) {
		if len(o.contexts) >= maxContexts {
			clear(o.contexts)
		}
		c = &authContext{snap: snap, expires: now.Add(o.ttl), files: map[string]Served{}}
		o.contexts[key] = c
	}
	return c
}

// current reports whether c (nil: none) still holds for snap at now: the
// same catalog, not expired.
func (c *authContext) current(snap *catalog.Snapshot, now time.Time) bool {
	return c != nil && c.snap == snap && !now.After(c.expires)
}

// lookup returns the cached verdict for uri, if any.
// knows reports whether c has a verdict for uri or a read of it under
// way; c.mu is held.
func (c *authContext) knows(uri string) bool {
	if _, ok := c.files[uri]; ok {
		return true
	}
	_, ok := c.reading[uri]
	return ok
}

func (c *authContext) lookup(uri string) (Served, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.files[uri]
	return s, ok
}

func (c *authContext) store(uri string, s Served) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[uri] = s
}

// unreachableBackoff is how long after a request found the upstream
// unreachable the overlay stops asking it (with unknownOK): a burst of
// listings then costs one failed dial, not one per request.
const unreachableBackoff = time.Second

// resolveIn is resolve within an authorization context already found, so a
// page of skills hashes the caller's credentials once, not once per skill.
// Files the upstream does not serve (by its listings) cost nothing; those it
// serves whose digest is not cached are read, a few at a time
// (readBounded), and a file another request of the context is reading is
// waited for, not read twice, unless that read leaves no verdict.
func (o *Overlay) resolveIn(c *authContext, r *http.Request, caller rewrite.Message, files []*catalog.File, unknownOK bool) (map[string]Served, error) {
	if unknownOK && o.now().UnixNano() < o.downUntil.Load() {
		return nil, nil // verdicts unknown: the plugin folder's files, not remembered
	}
	set, vouched, err := o.servedSetOf(c, r, caller, files)
	if err != nil {
		return nil, o.unknown(err, unknownOK)
	}
	if !vouched && prefetching(r) {
		return nil, errUnvouched
	}
	var out map[string]Served
	add := func(uri string, s Served) {
		if s.Upstream {
			if out == nil {
				out = map[string]Served{}
			}
			out[uri] = s
		}
	}
	var firstErr error
	pending := files
	// A second round takes the files whose read another request had under
	// way and which that read left without a verdict for a reason of its
	// own (its caller left, the upstream said its resources changed while
	// it ran, the upstream refused that request, which may be its session's
	// doing, or in a shared context it failed with another caller's
	// credentials): this request reads them itself, or waits for whoever
	// claimed them first, rather than answer the plugin's file for a file
	// the upstream serves. A read that failed otherwise (no reply, a reply
	// that is no answer) is not repeated by its waiters: its failure is
	// their answer too, as it is the reader's.
	for round := 0; round < 2 && len(pending) > 0; round++ {
		if err := r.Context().Err(); err != nil {
			return nil, err // a caller gone claims no reads it cannot finish
		}
		mine, theirs := c.claim(set, pending, add)
		got, errs := o.readClaimed(c, r, caller, mine)
		for i, f := range mine {
			if errs[i] != nil {
				if firstErr == nil {
					firstErr = errs[i]
				}
				continue
			}
			add(f.URI, got[i])
		}
		pending = nil
		for _, w := range theirs {
			select {
			case <-w.done:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			if s, ok := c.lookup(w.f.URI); ok {
				add(w.f.URI, s)
				continue
			}
			switch {
			case w.again:
				pending = append(pending, w.f)
			case w.err != nil && firstErr == nil:
				firstErr = w.err // the same answer as the page that read it
			}
		}
	}
	if firstErr != nil {
		if err := o.unknown(firstErr, unknownOK); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readClaimed reads the files claimed for r (claim), stores what it may
// keep as c's verdicts and ends each claim, telling its waiters whether to
// read the file again (readClaim.again) or share its failure.
func (o *Overlay) readClaimed(c *authContext, r *http.Request, caller rewrite.Message, mine []*catalog.File) ([]Served, []error) {
	if len(mine) == 0 {
		return nil, nil
	}
	gen := o.changes.Load()
	got, errs := o.readBounded(r, caller, mine)
	left := r.Context().Err() != nil
	c.mu.Lock()
	defer c.mu.Unlock()
	// What was read before the upstream said its files changed answers
	// this request, and is not kept for the next. The count is read under
	// c.mu, as in guesses.publish.
	keep := o.changes.Load() == gen
	for i, f := range mine {
		if errs[i] == nil && keep {
			c.files[f.URI] = got[i]
		}
		rc := c.reading[f.URI]
		// A refusal is the upstream's word on the reader's own request
		// (its session: a context is credentials and address, not a
		// session), and in a shared context any failure was another
		// caller's: each waiter asks with its own.
		rc.again = left || errs[i] == nil && !keep || errs[i] != nil && (o.shared || isRefusal(errs[i]))
		if !rc.again {
			rc.err = errs[i]
		}
		close(rc.done)
		delete(c.reading, f.URI)
	}
	return got, errs
}

// errUnvouched ends a prefetch whose discovery's first listing page did
// not admit its caller: it reads nothing, and keeps nothing, before a page
// of that caller is admitted by the gate's own probe.
var errUnvouched = errors.New("methods: the prefetch's caller is not admitted yet")

// readClaim is a read of a file under way for one request of a context.
// again, set before done is closed, says that the read left no verdict for
// a reason of its own request (its caller left, a change came while it
// ran, the upstream refused it, or in a shared context it failed with its
// caller's credentials), so a waiter should read the file itself.
type readClaim struct {
	done  chan struct{}
	again bool
	// err is the read's failure when it is its waiters' too (again
	// false): they answer as the page that read it does.
	err error
	// waiters counts the requests waiting on done (for tests).
	waiters int
}

// awaited is a file whose read another request of the context has under
// way.
type awaited struct {
	f *catalog.File
	*readClaim
}

// claim sorts the files set serves: a verdict c has is given to add, a read
// under way is awaited, and every other file is claimed for the caller to
// read (mine), marked in c.reading until it closes that read. The files are
// matched against set's templates before c's lock is taken: a large page
// matched against many templates holds up nobody else of the context.
func (c *authContext) claim(set *servedSet, files []*catalog.File, add func(string, Served)) (mine []*catalog.File, theirs []awaited) {
	var upstream []*catalog.File
	for _, f := range files {
		if set.serves(f.URI) {
			upstream = append(upstream, f)
		}
	}
	if len(upstream) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range upstream {
		if s, ok := c.files[f.URI]; ok {
			add(f.URI, s)
			continue
		}
		if rc, ok := c.reading[f.URI]; ok {
			rc.waiters++
			theirs = append(theirs, awaited{f, rc})
			continue
		}
		if c.reading == nil {
			c.reading = map[string]*readClaim{}
		}
		c.reading[f.URI] = &readClaim{done: make(chan struct{})}
		mine = append(mine, f)
	}
	return mine, theirs
}

// unknown turns an error of the upstream into the answer's: with unknownOK
// an unreachable upstream is no error (the verdicts stay unknown, and the
// upstream is left alone for unreachableBackoff); anything else is.
func (o *Overlay) unknown(err error, unknownOK bool) error {
	if unknownOK && errors.Is(err, onbehalf.ErrUnreachable) {
		o.downUntil.Store(o.now().Add(unreachableBackoff).UnixNano())
		return nil
	}
	return err
}

// ServesURI reports whether the upstream serves uri itself for the caller
// of r, by its listings and any verdict already learned, without reading
// it: a forwarded read learns its bytes (readWatch).
func (o *Overlay) ServesURI(r *http.Request, caller rewrite.Message, snap *catalog.Snapshot, uri string, unknownOK bool) (bool, error) {
	if unknownOK && o.now().UnixNano() < o.downUntil.Load() {
		return false, nil
	}
	key := o.authKey(r)
	c := o.contextAt(key, snap)
	set, _, err := o.servedSetOf(c, r, caller, nil)
	if err != nil {
		o.dropIfEmpty(key, c) // a refused caller leaves no entry behind
		return false, o.unknown(err, unknownOK)
	}
	if !set.serves(uri) {
		return false, nil
	}
	if s, ok := c.lookup(uri); ok {
		return s.Upstream, nil // listed, but read as not found: the plugin's
	}
	return true, nil
}

// probe asks the upstream for uri. A not-found answer (or an upstream
// without resources) means the sidecar serves it; a refusal of the caller
// is returned as the error so it reaches the caller unchanged.
func (o *Overlay) probe(r *http.Request, caller rewrite.Message, uri string) (Served, error) {
	o.Metrics.DigestRefresh()
	m, err := o.up.Call(r, caller, "resources/read", map[string]json.RawMessage{"uri": quoted(uri)})
	if err != nil {
		return Served{}, err
	}
	if m.Kind != rewrite.KindResponse {
		return Served{}, nil // not found, not supported, or failed: the sidecar serves its own
	}
	s, err := servedOf(uri, m.Result, o.FrontmatterPortability)
	o.Metrics.HashedBytes(s.Size)
	return s, err
}

// servedOf digests the bytes a resources/read result serves: the UTF-8
// bytes of text, or the decoded bytes of blob (SEP-2640), and reads a
// SKILL.md's frontmatter under portability (servedFrontmatter). The entry
// ServedEntry takes is judged by the rule a forwarded read's is
// (readScan), fed to it in place as a reply holding that entry alone, so
// an entry clients could read more than one way (text that is not
// Unicode, text beside blob, a duplicate member, no uri) has no digest on
// either path.
func servedOf(uri string, result json.RawMessage, portability string) (Served, error) {
	c, ok := ServedEntry(uri, result)
	if !ok {
		return Served{}, fmt.Errorf("upstream resources/read %s: no contents", uri)
	}
	own, _ := rewrite.GetString(c, "uri") // another URI's, when ServedEntry took the first entry
	s := newReadScan(own, ownReadID)
	s.skill, s.portability = strings.HasSuffix(uri, "/SKILL.md"), portability
	s.Write(ownReadHead)
	s.Write(c)
	s.Write(ownReadTail)
	if out, served := s.End(); out == scanServed {
		return served, nil
	}
	return Served{}, fmt.Errorf("upstream resources/read %s: the contents entry is not one every client reads alike", uri)
}

// ownReadHead and ownReadTail wrap the entry servedOf judges as a reply,
// whose id is ownReadID.
var (
	ownReadID   = []byte("0")
	ownReadHead = []byte(`{"jsonrpc":"2.0","id":0,"result":{"contents":[`)
	ownReadTail = []byte(`]}}`)
)

// ServedEntry returns the contents entry of a resources/read result that
// serves uri: the first whose uri is uri, as a forwarded read is judged
// (readScan), else the first entry. Both the overlay's own reads and a
// forwarded read so publish one digest for one reply, and host
// compatibility embeds the entry whose digest is published. An entry is
// looked past only when the first is another URI's, so the common reply of
// one entry costs one scan, with no copy.
func ServedEntry(uri string, result []byte) (json.RawMessage, bool) {
	raw, _ := rewrite.GetKey(result, []string{"contents"})
	first, ok := rewrite.FirstElement(raw)
	if !ok {
		return nil, false
	}
	if u, ok := rewrite.GetString(first, "uri"); ok && u == uri {
		return first, true
	}
	var all []json.RawMessage
	if json.Unmarshal(raw, &all) == nil {
		for _, c := range all {
			if u, ok := rewrite.GetString(c, "uri"); ok && u == uri {
				return c, true
			}
		}
	}
	return first, true
}

// servedFrontmatter reads the frontmatter of a SKILL.md the upstream serves
// by the rules the catalog applies to the plugin folder's: one that does
// not parse is withheld, and so is one with a plain scalar YAML 1.1 hosts
// read differently (catalog.Ambiguity) unless portability is
// catalog.PortabilityWarn, each with the catalog's reason. A withheld skill
// is left out of skills/list and skills/get, as the catalog skips such a
// skill of its own (a host could not install it, or would read it
// differently: docs/frontmatter.md); the rest of the page is served. Its
// files' digests and sizes are still the served bytes'.
func servedFrontmatter(text []byte, portability string) (fm json.RawMessage, withheld string) {
	fm, _, amb, err := catalog.ParseFrontmatterAmbiguities(text)
	if err != nil {
		return nil, catalog.FrontmatterReason(err)
	}
	if len(amb) > 0 && portability != catalog.PortabilityWarn {
		return nil, catalog.AmbiguityReason(amb)
	}
	return fm, ""
}

// hashChunk is how much base64 a read's blob is decoded at a time
// (b64Stream): a multiple of 4, so every chunk but the last decodes on its
// own, and small enough that the decoded bytes are still in the CPU's
// first-level cache when they are hashed (8 KiB ran about 20% faster than
// 32 KiB here).
const hashChunk = 8 << 10

// quoted is s as a JSON string.
func quoted(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
