package upstreamfiles

import (
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Resolve returns the verdicts on files for r's caller, by the keys of the
// files the upstream serves (a file absent is the plugin folder's): the
// reads of those files run side by side. A nil map with no error: the
// verdicts are unknown and unknownOK, the catalog's own files stand. A
// refused caller leaves no context behind.
func (o *Overlay) Resolve(r *http.Request, caller rewrite.Message, snap *catalog.Snapshot, files []*catalog.File, unknownOK bool) (map[string]Served, error) {
	key := o.authKey(r)
	c := o.contextAt(key, snap)
	over, err := o.resolveIn(c, r, caller, files, unknownOK)
	if err != nil {
		o.dropIfEmpty(key, c)
	}
	return over, err
}

// Upstream is the upstream the overlay asks, on the caller's behalf.
func (o *Overlay) Upstream() *onbehalf.Upstream { return o.up }

// Listing is what the upstream lists for one caller (its discovery),
// with that caller's context, for the sizes the sidecar's own listings
// state (resources/list, resources/directory/read).
type Listing struct {
	o         *Overlay
	c         *authContext
	set       *servedSet
	r         *http.Request
	caller    rewrite.Message
	unknownOK bool
}

// ListingFor returns r's caller's Listing (its discovery, run or
// awaited); nil when that is unknown (the upstream unreachable, the caller
// refused): the catalog's own entries then stand, as skills/list's do.
func (o *Overlay) ListingFor(r *http.Request, caller rewrite.Message, snap *catalog.Snapshot, unknownOK bool) *Listing {
	if unknownOK && o.now().UnixNano() < o.downUntil.Load() {
		return nil
	}
	key := o.authKey(r)
	c := o.contextAt(key, snap)
	set, _, err := o.servedSetOf(c, r, caller, nil)
	if err != nil {
		o.dropIfEmpty(key, c)
		if unknownOK {
			_ = o.unknown(err, unknownOK)
		}
		return nil
	}
	return &Listing{o: o, c: c, set: set, r: r, caller: caller, unknownOK: unknownOK}
}

// ListsAny reports whether the upstream lists any URI.
func (l *Listing) ListsAny() bool { return len(l.set.uris) > 0 }

// Lists reports whether the upstream lists uri itself.
func (l *Listing) Lists(uri string) bool {
	_, ok := l.set.uris[uri]
	return ok
}

// Serves reports whether the upstream serves uri by its listings.
func (l *Listing) Serves(uri string) bool { return l.set.serves(uri) }

// Resolve is Overlay.Resolve within the listing's context; verdicts that
// cannot be learned are left out.
func (l *Listing) Resolve(files []*catalog.File) map[string]Served {
	over, _ := l.o.resolveIn(l.c, l.r, l.caller, files, l.unknownOK)
	return over
}

// Verdict is the context's stored verdict on uri, if any.
func (l *Listing) Verdict(uri string) (Served, bool) { return l.c.lookup(uri) }
