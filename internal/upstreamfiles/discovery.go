package upstreamfiles

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"golang.org/x/sync/errgroup"
)

// Discovery: which catalog URIs the upstream serves is learned from the
// upstream's own listings, not by reading each URI (docs/design.md, decision 2).
// For an authorization context the overlay follows every page of the
// upstream's resources/list and resources/templates/list, with the caller's
// credentials and session (onbehalf.Upstream.Call); a
// catalog URI listed there, or matching one of the templates, is the
// upstream's and is read (and hashed) when a listing needs its digest; every
// other catalog URI is the plugin folder's and costs nothing. The learned
// set lives as long as the context's verdicts (upstream-files-ttl).
//
// The cost is bounded three ways. Concurrent first requests of one context
// share one discovery (the first runs it, the others wait for it). At most
// MaxDiscoveries discoveries are in flight for the whole sidecar, so callers
// with random credentials (junk cookies, each a new context) queue instead
// of multiplying the load. And each listing follows at most
// maxDiscoveryPages pages: past them the rest of the listing is not
// followed, and catalog URIs not seen are the plugin's.
//
// An upstream that declares no resources capability is asked nothing. The
// capability is learned from the initialize and server/discover replies the
// sidecar relays (ObserveHandshake), for the whole sidecar: capabilities are
// the server's, not a caller's. Until a handshake reply has been seen (a
// replica that never relayed one), the upstream is asked, and a
// resources/list answered "method not found" (-32601) is taken as the same
// declaration.

// Defaults of the overlay's bounds.
const (
	// DefaultFileReads is how many reads of upstream-served files one
	// request runs at once.
	DefaultFileReads = 8
	// DefaultMaxDiscoveries is how many discoveries run at once in the
	// whole sidecar.
	DefaultMaxDiscoveries = 16
	// maxDiscoveryPages bounds the pages followed of each listing.
	maxDiscoveryPages = 16
	// maxTemplates bounds the URI templates kept of one discovery.
	maxTemplates = 256
)

// Capability states of the upstream's resources (Overlay.resourcesCap).
const (
	capUnknown int32 = iota
	capResources
	capNone
)

// servedSet is what one discovery learned: the catalog URIs the upstream
// lists and its URI templates that could match a catalog URI.
type servedSet struct {
	uris      map[string]struct{}
	templates []*uriTemplate
	// incomplete: a listing ended in a JSON-RPC error, so the set may lack
	// URIs the upstream serves. It answers the requests that waited for it
	// and is not kept: the next request asks again, rather than publishing
	// the plugin's digests for the upstream's files for a whole TTL.
	incomplete bool
}

// nothingServed is the set of an upstream with no resources.
var nothingServed = &servedSet{}

// serves reports whether the upstream serves uri itself.
func (s *servedSet) serves(uri string) bool {
	if _, ok := s.uris[uri]; ok {
		return true
	}
	for _, t := range s.templates {
		if t.match(uri) {
			return true
		}
	}
	return false
}

// discovery is one context's discovery, shared by every request of the
// context that needs it while it runs.
type discovery struct {
	done chan struct{}
	set  *servedSet
	err  error
	// listed is closed once the first page of resources/list has its
	// answer, or the discovery ended without one: the gate's verdict may
	// come from that answer (Overlay.Witness).
	listed     chan struct{}
	listedOnce sync.Once
	// firstErr is the first resources/list page's error, and admitted
	// whether the gate admitted the caller on its answer (Witness); both
	// are set before listed is closed. A refusal there is the caller's
	// answer.
	firstErr error
	admitted bool
	// abandoned: the discovery ended because its own request's context
	// did (cancelled or past its deadline), set before done is closed.
	abandoned bool
	// guesses are reads started beside the listings, of files another
	// context's discovery found served (Overlay.hint): a result is used
	// only when this discovery's set serves the file, and only once.
	guesses *guesses
}

func newDiscovery() *discovery {
	return &discovery{done: make(chan struct{}), listed: make(chan struct{})}
}

// markListed closes d.listed, once.
func (d *discovery) markListed() { d.listedOnce.Do(func() { close(d.listed) }) }

// ObserveHandshake learns the upstream's resources capability from a reply
// to initialize or server/discover passing through: a result whose
// capabilities lack resources means the upstream is asked nothing.
func (o *Overlay) ObserveHandshake(reply []byte) {
	caps, ok := rewrite.GetKey(reply, []string{"result", "capabilities"})
	if !ok || len(caps) == 0 || caps[0] != '{' {
		return
	}
	if _, has := rewrite.GetKey(caps, []string{"resources"}); has {
		o.resourcesCap.Store(capResources)
	} else {
		o.resourcesCap.Store(capNone)
	}
}

// servedSetOf returns what the upstream serves for context c, running the
// context's discovery or waiting for the one running, and whether that
// discovery vouches for its caller: its first listing page admitted the
// caller (Witness), or there is no gate. A discovery it starts guesses
// reads among files (Guessed reads).
func (o *Overlay) servedSetOf(c *authContext, r *http.Request, caller rewrite.Message, files []*catalog.File) (_ *servedSet, vouched bool, _ error) {
	if d, _ := r.Context().Value(ownKey{}).(*discovery); d != nil {
		// The request that started d before the gate's verdict (early)
		// takes its answer, as the request running a discovery does,
		// even one not kept (an incomplete listing): a page costs one
		// discovery, however the gate admitted it.
		if err := d.wait(r); err != nil {
			return nil, false, err
		}
		return d.set, d.vouches(o), d.err
	}
	for {
		if o.resourcesCap.Load() == capNone {
			return nothingServed, true, nil
		}
		c.mu.Lock()
		d, run := c.disc, false
		if d == nil {
			d, run = newDiscovery(), true
			d.guesses = o.guess(c, files)
			c.disc = d
		}
		c.mu.Unlock()
		if run {
			o.runDiscovery(c, d, r, caller)
		}
		if err := d.wait(r); err != nil {
			return nil, false, err
		}
		// A discovery that ended with its own request (its caller went
		// away, it was withdrawn at its caller's refusal, a prefetch ran
		// out of time) is no answer for a caller still waiting: that one
		// runs its own (or waits for the next), however many such came
		// first. Nor is another request's refusal: this caller was
		// admitted since (by the gate, with its own credentials, which
		// with upstream-files-shared are not even the same), so it asks
		// again. The loop ends: a discovery this caller runs itself is
		// ended by nobody else.
		if d.err != nil && !run && (d.abandoned || isRefusal(d.err)) {
			continue
		}
		return d.set, d.vouches(o), d.err
	}
}

// wait waits until d ends or r's caller leaves, and returns the caller's
// error if it left, whichever came first: a caller gone reads nothing.
func (d *discovery) wait(r *http.Request) error {
	select {
	case <-d.done:
	case <-r.Context().Done():
	}
	return r.Context().Err()
}

// vouches reports whether d's first listing page admitted its caller, or
// no gate is asked (Overlay.Witness unset).
func (d *discovery) vouches(o *Overlay) bool { return o.Witness == nil || d.admitted }

// runDiscovery fills d, within the sidecar's bound of discoveries in flight,
// and publishes it. A failed discovery is not kept: the next request of the
// context runs a new one.
func (o *Overlay) runDiscovery(c *authContext, d *discovery, r *http.Request, caller rewrite.Message) {
	defer close(d.done)
	defer d.markListed()
	defer func() { d.abandoned = d.err != nil && r.Context().Err() != nil }()
	if err := o.slots.Acquire(r.Context(), 1); err != nil {
		d.err = err
	} else {
		defer o.slots.Release(1)
	}
	if d.err != nil {
		d.guesses.skip()
	} else {
		// The guessed reads go beside the listings, within the
		// discovery's slot: random credentials cannot multiply them
		// past the bound of discoveries in flight. A failed discovery
		// ends them: nothing would use them.
		gctx, stop := context.WithCancel(r.Context())
		guessed := d.guesses.start(o, r.WithContext(gctx), caller)
		d.set, d.err = o.discover(r, caller, c.snap, func(admitted bool, err error) {
			d.admitted, d.firstErr = admitted, err
			d.markListed()
		})
		if d.err != nil {
			stop()
		}
		<-guessed
		stop()
		// Only a discovery whose listing admitted its caller (or one
		// made without a gate) vouches for its guesses: a caller the
		// gate's own probe may still refuse leaves nothing behind.
		if d.err == nil && d.vouches(o) {
			d.guesses.publish(o, c, d.set)
		}
	}
	if d.err == nil && !d.set.incomplete && d.set != nothingServed && d.vouches(o) {
		o.hint.Store(d.set) // only what an admitted caller's listing said steers others' guesses
	}
	// A prefetch's discovery that no listing vouched for is not kept
	// either: no page of its caller has been admitted, and none may be.
	if d.err != nil || d.set.incomplete || prefetching(r) && !d.vouches(o) {
		c.mu.Lock()
		if c.disc == d {
			c.disc = nil
		}
		c.mu.Unlock()
	}
}

// errNoMethod marks a listing the upstream answers "method not found".
var errNoMethod = errors.New("method not found")

// errListingCut marks a listing that ended in another JSON-RPC error: what
// it gave so far stands, but the set is incomplete.
var errListingCut = errors.New("listing ended in a JSON-RPC error")

// discover takes the upstream's listings for the caller of r: the two
// listings run side by side, so a discovery of one-page listings costs one
// round trip, not two.
// listed is called once the first page of resources/list has its answer,
// with whether it admitted the caller (Witness) and that page's error.
func (o *Overlay) discover(r *http.Request, caller rewrite.Message, snap *catalog.Snapshot, listed func(bool, error)) (*servedSet, error) {
	set := &servedSet{uris: map[string]struct{}{}}
	var templates []*uriTemplate
	var terr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		terr = o.listAll(r, caller, "resources/templates/list", "resourceTemplates", nil, func(item json.RawMessage) {
			t, ok := rewrite.GetString(item, "uriTemplate")
			if !ok || len(templates) >= maxTemplates || !mayMatchCatalog(t) {
				return
			}
			if ut := compileTemplate(t); ut != nil {
				templates = append(templates, ut)
			}
		})
	}()
	// The first page's answer may be the gate's verdict on the caller
	// (Witness), which a new caller's first page waits for.
	first := func(status int, m rewrite.Message, err error) {
		admitted := o.Witness != nil && o.Witness(r, status, m, err, !prefetching(r))
		listed(admitted, err)
	}
	err := o.listAll(r, caller, "resources/list", "resources", first, func(item json.RawMessage) {
		uri, ok := rewrite.GetString(item, "uri")
		if !ok || snap == nil {
			return
		}
		if _, inCatalog := snap.File(uri); inCatalog {
			set.uris[uri] = struct{}{}
		}
	})
	<-done
	if errors.Is(err, errNoMethod) {
		o.resourcesCap.Store(capNone)
		return nothingServed, nil
	}
	if errors.Is(err, errListingCut) {
		set.incomplete, err = true, nil
	}
	if errors.Is(terr, errListingCut) {
		set.incomplete, terr = true, nil
	}
	if err != nil {
		return nil, err
	}
	if terr != nil && !errors.Is(terr, errNoMethod) {
		return nil, terr
	}
	set.templates = templates
	return set, nil
}

// mayMatchCatalog reports whether a template's literal start is compatible
// with a catalog URI (skill://…), so templates of other schemes cost
// nothing to keep or match.
func mayMatchCatalog(t string) bool {
	lit := t
	if i := strings.IndexByte(t, '{'); i >= 0 {
		lit = t[:i]
	}
	return strings.HasPrefix(lit, catalog.Scheme) || strings.HasPrefix(catalog.Scheme, lit)
}

// listAll follows the pages of a listing method, calling each for every
// element of the result's key array, for at most maxDiscoveryPages pages;
// first, when set, is given the first page's HTTP status, answer and error.
// A JSON-RPC error -32601 is errNoMethod; any other JSON-RPC error ends the
// listing with what it gave so far and errListingCut (the set is then used
// once and not kept: a transient error must not hide the upstream's files
// for a TTL); a refusal or an unreachable upstream is the error.
func (o *Overlay) listAll(r *http.Request, caller rewrite.Message, method, key string, first func(int, rewrite.Message, error), each func(json.RawMessage)) error {
	cursor := ""
	for page := range maxDiscoveryPages {
		params := map[string]json.RawMessage{}
		if cursor != "" {
			params["cursor"] = quoted(cursor)
		}
		m, status, err := o.up.CallStatus(r, caller, method, params)
		if page == 0 && first != nil {
			first(status, m, err)
		}
		if err != nil {
			return err
		}
		if m.Kind != rewrite.KindResponse {
			if code, _ := rewrite.GetKey(m.Error, []string{"code"}); string(code) == "-32601" {
				return errNoMethod
			}
			return errListingCut
		}
		var page map[string]json.RawMessage
		var items []json.RawMessage
		if json.Unmarshal(m.Result, &page) == nil {
			_ = json.Unmarshal(page[key], &items) // not an array: nothing listed
		}
		for _, it := range items {
			each(it)
		}
		var next string
		if json.Unmarshal(page["nextCursor"], &next) != nil || next == "" {
			return nil
		}
		cursor = next
	}
	return nil // past the bound: what was listed so far (see maxDiscoveryPages)
}

// readBounded reads files from the upstream, at most DefaultFileReads at
// a time, and returns each verdict (or error) in files' order.
func (o *Overlay) readBounded(r *http.Request, caller rewrite.Message, files []*catalog.File) ([]Served, []error) {
	out, errs := make([]Served, len(files)), make([]error, len(files))
	if len(files) == 1 {
		for i, f := range files {
			out[i], errs[i] = o.probe(r, caller, f.URI)
		}
		return out, errs
	}
	var g errgroup.Group
	g.SetLimit(DefaultFileReads)
	for i, f := range files {
		g.Go(func() error {
			out[i], errs[i] = o.probe(r, caller, f.URI)
			return nil // each file's error is its own, in errs
		})
	}
	_ = g.Wait()
	return out, errs
}

// Early discovery. A new context's first skills/list (or skills/get) needs
// the gate's verdict and the discovery's listings. startDiscovery starts
// the discovery before the gate is asked, and the gate's verdict comes
// from its first resources/list page (Overlay.Witness: a result there
// admits the caller, so no probe is sent; the upstream's refusal there is
// the caller's answer, since the page needs that listing whatever a probe
// would say); only a page that is neither (a JSON-RPC error, no reply) is
// followed by the gate's own probe. The request then takes the answer of
// the discovery it started (servedSetOf), even one that is not kept (a
// listing that broke off): the probe's admission does not cost a second.
// Until the gate has admitted the caller the discovery is provisional: a
// refusal withdraws it (its calls are cancelled, it is forgotten, and its
// context is dropped when nothing else was learned in it), so a refused
// caller leaves nothing another caller could use, nor an empty entry
// pushing others out of the cache. Its costs: a refused new caller costs
// the upstream the listings (and the guessed reads, below) rather than a
// probe; the verdict of a new caller waits for a discovery slot (under a
// flood of new contexts, refusals queue behind the bound of discoveries in
// flight like admissions); and when the first page is neither a result
// nor a refusal, the probe follows it instead of running beside it.

// Early is a discovery started before the gate's verdict. The nil value
// started nothing.
type Early struct {
	o      *Overlay
	c      *authContext
	d      *discovery
	key    string
	cancel context.CancelFunc
	exited chan struct{}
}

// StartDiscovery starts the discovery of r's context in the background
// when none is learned or running, and returns it; nil when there is
// nothing to start. Beside it go the reads of the files of the caller's
// page (files, asked only then) that the last discovery of any context found served
// (guesses): when the upstream serves every context alike, the page's
// reads then take the listings' round trip, not one of their own.
//
// When the context's discovery is running already (another request's, or
// a prefetch's: prefetch.go) it returns nil and that discovery's listed
// channel, so the gate is asked once its first listing page is answered
// (and may have admitted this caller) rather than beside it; with
// upstream-files-shared the discovery may be another caller's, and it
// returns nil, nil.
func (o *Overlay) StartDiscovery(r *http.Request, caller rewrite.Message, snap *catalog.Snapshot, unknownOK bool, files func() []*catalog.File) (*Early, <-chan struct{}) {
	if o.resourcesCap.Load() == capNone || (unknownOK && o.now().UnixNano() < o.downUntil.Load()) {
		return nil, nil
	}
	key := o.authKey(r)
	c := o.contextAt(key, snap)
	c.mu.Lock()
	if d := c.disc; d != nil {
		c.mu.Unlock()
		select {
		case <-d.done:
			return nil, nil
		default:
		}
		if o.shared {
			return nil, nil // another caller's credentials: it admits nobody else
		}
		return nil, d.listed
	}
	d := newDiscovery()
	ctx, cancel := context.WithCancel(r.Context())
	d.guesses = o.guess(c, files())
	c.disc = d
	c.mu.Unlock()
	e := &Early{o: o, c: c, d: d, key: key, cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(e.exited)
		o.runDiscovery(c, d, r.WithContext(ctx), caller)
	}()
	return e, nil
}

// Listed waits until the early discovery's first resources/list page has
// its answer (the gate may have its verdict from it: Overlay.Witness), the
// discovery ended, or the caller left. It reports whether the gate
// admitted the caller on that page (then the gate need not be asked), and
// returns the upstream's refusal of it, if it refused it: the caller's
// answer, since the page needs the listing whatever a probe would say.
func (e *Early) Listed(ctx context.Context) (bool, *onbehalf.Refusal) {
	if e == nil {
		return false, nil
	}
	select {
	case <-e.d.listed:
	case <-ctx.Done():
		return false, nil
	}
	var ref *onbehalf.Refusal
	if errors.As(e.d.firstErr, &ref) {
		return false, ref
	}
	return e.d.admitted, nil
}

// isRefusal reports whether err is the upstream's refusal of a caller.
func isRefusal(err error) bool {
	var ref *onbehalf.Refusal
	return errors.As(err, &ref)
}

// Withdraw forgets a discovery the gate's refusal made pointless: its calls
// are cancelled and waited for, it is no longer the context's, and the
// context is dropped when nothing else was learned in it.
func (e *Early) Withdraw() {
	if e == nil {
		return
	}
	e.cancel()
	<-e.exited
	e.c.mu.Lock()
	if e.c.disc == e.d {
		e.c.disc = nil
	}
	e.c.mu.Unlock()
	e.o.dropIfEmpty(e.key, e.c)
}

// ownKey marks the context of the request that started an early
// discovery, with that discovery (servedSetOf).
type ownKey struct{}

// Own returns r marked as the request that started e's discovery, once the
// gate has admitted it; r itself when e started nothing.
func (e *Early) Own(r *http.Request) *http.Request {
	if e == nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), ownKey{}, e.d))
}

// End is called when the request that started the discovery has its
// answer: a discovery its answer did not wait for (an error found before
// the listing was needed) is cancelled, and its goroutine is gone when end
// returns, so none outlives its request.
func (e *Early) End() {
	if e == nil {
		return
	}
	e.cancel()
	<-e.exited
}

// Guessed reads. The set a context's discovery learns is that context's
// alone, but most upstreams serve every caller the same files, so the last
// complete set learned (Overlay.hint) is a good guess at a new context's.
// A new context's first page reads the files of the page the hint serves
// beside its listings, with the caller's own headers, within the same
// bound of reads at once. When the listings come, a successful guessed read
// of a file the context's own set serves becomes the context's verdict for
// it, as a read of its own would have, before the discovery is published:
// every request sharing that discovery (another page, a prefetch) finds it
// and none reads the file again. A guessed result for a file the set does
// not serve is dropped unused: the cost of a wrong guess is that read,
// never a wrong digest, since only the context's own listings say what it
// is served. A failed read is not kept (a refusal, or the reader's
// cancellation, is nobody else's answer), nor is anything read before a
// notification that the upstream's resources changed. The guessed reads
// hold the discovery's slot until they end, and a failed discovery cancels
// them and keeps nothing.

// guesses are the reads guessed for one discovery, started while the
// overlay's count of changes was gen.
type guesses struct {
	gen   int64
	files []*catalog.File
	done  chan struct{} // closed when every read has its result

	out  []Served // by files' index, once done
	errs []error
}

// guess returns the reads to guess among files for context c, nil for
// none; c.mu is held. A file c has a verdict for, or a read of under way, is
// not guessed: a discovery after one that was not kept (an incomplete
// listing) would otherwise read again what the context already knows.
func (o *Overlay) guess(c *authContext, files []*catalog.File) *guesses {
	hint := o.hint.Load()
	if hint == nil {
		return nil
	}
	var mine []*catalog.File
	for _, f := range files {
		if !c.knows(f.URI) && hint.serves(f.URI) {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	return &guesses{gen: o.changes.Load(), files: mine, done: make(chan struct{})}
}

// start runs the guessed reads in the background, at most
// DefaultFileReads at once; the channel it returns (closed at once for
// none) is closed when they have their results.
func (g *guesses) start(o *Overlay, r *http.Request, caller rewrite.Message) <-chan struct{} {
	if g == nil {
		return closed
	}
	go func() {
		defer close(g.done)
		g.out, g.errs = o.readBounded(r, caller, g.files)
	}()
	return g.done
}

// closed is a closed channel.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// skip ends guesses that will not be read.
func (g *guesses) skip() {
	if g != nil {
		close(g.done)
	}
}

// publish makes each successful guessed read of a file set serves context
// c's verdict, unless c has one already or a read of it is under way, and
// unless the upstream said its resources changed since the reads started;
// after the reads are done. The count of changes is read under c.mu: a
// notification counts first and then drops verdicts context by context,
// so a change counted after the check drops what was published.
func (g *guesses) publish(o *Overlay, c *authContext, set *servedSet) {
	if g == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.changes.Load() != g.gen {
		return
	}
	for i, f := range g.files {
		if g.errs[i] != nil || !set.serves(f.URI) {
			continue
		}
		if c.knows(f.URI) {
			continue
		}
		c.files[f.URI] = g.out[i]
	}
}
