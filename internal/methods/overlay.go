package methods

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/authgate"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Upstream-served skill files (DESIGN.md decision 2). When the upstream
// itself serves a URI of the catalog, its bytes win: the sidecar serves
// nothing for that URI, forwards reads of it, and publishes the digest, size
// and (for SKILL.md) frontmatter of what the upstream actually returns. Who
// serves a URI is decided per URI by asking the upstream with the caller's
// own credentials: a not-found answer means the sidecar serves the plugin
// folder's file. What is learned is cached per authorization context (a
// hash of the credential headers), or once for everyone when the operator
// declares the upstream's content shared, until it expires or a forwarded
// read shows different bytes. Without an auth gate, an upstream that cannot
// be reached leaves a verdict unknown rather than failing the answer: the
// plugin folder's file is published and served, and nothing is stored, so
// the verdict is learned once the upstream answers again.

// served is what one URI looks like to one authorization context.
type served struct {
	upstream    bool // the upstream serves this URI; its bytes are below
	digest      string
	size        int64
	frontmatter json.RawMessage // SKILL.md only
}

// authContext caches the verdicts of one authorization context for one
// snapshot.
type authContext struct {
	snap    *catalog.Snapshot
	expires time.Time
	mu      sync.Mutex
	files   map[string]served
}

// Overlay decides who serves each catalog URI and what its served bytes
// are. The zero value is not usable; build it with NewOverlay.
type Overlay struct {
	up     *Upstream
	ttl    time.Duration
	shared bool
	now    func() time.Time

	mu       sync.Mutex
	contexts map[string]*authContext

	// Mismatches counts forwarded reads whose bytes differed from what was
	// published; Probes counts reads made to learn who serves a URI.
	Mismatches, Probes atomic.Int64
	// Metrics, when set, records probes, mismatches and bytes hashed.
	Metrics *metrics.Metrics

	// downUntil (Unix nanoseconds by now) is when the overlay may ask an
	// upstream it last found unreachable again; see unreachableBackoff.
	downUntil atomic.Int64
}

// maxContexts bounds the authorization contexts cached at once; past it the
// cache starts over (the cost is a re-probe, never a wrong answer).
const maxContexts = 4096

// NewOverlay returns an Overlay asking up. ttl is how long a verdict is
// trusted (0 means 60s); shared caches one set of verdicts for every caller.
func NewOverlay(up *Upstream, ttl time.Duration, shared bool) *Overlay {
	if ttl <= 0 {
		ttl = 60 * time.Second
	}
	return &Overlay{up: up, ttl: ttl, shared: shared, now: time.Now, contexts: map[string]*authContext{}}
}

// Invalidate forgets every verdict and digest learned, so the next listing
// asks the upstream again. The proxy calls it when the upstream announces
// that its resources changed (notifications/resources/updated or
// list_changed passing through).
func (o *Overlay) Invalidate() {
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.contexts)
}

// authKey is the cache key of a caller: a hash of its credential headers
// and network identity (authgate.CallerKey).
func (o *Overlay) authKey(r *http.Request) string {
	if o.shared {
		return ""
	}
	return callerKey(r, o.up.credentials()...)
}

// callerKey is authgate.CallerKey as a map key.
func callerKey(r *http.Request, names ...string) string {
	k := authgate.CallerKey(r, names...)
	return string(k[:])
}

func (o *Overlay) context(r *http.Request, snap *catalog.Snapshot) *authContext {
	key := o.authKey(r)
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.contexts[key]
	if c == nil || c.snap != snap || now.After(c.expires) {
		if len(o.contexts) >= maxContexts {
			clear(o.contexts)
		}
		c = &authContext{snap: snap, expires: now.Add(o.ttl), files: map[string]served{}}
		o.contexts[key] = c
	}
	return c
}

// lookup returns the cached verdict for uri, if any.
func (c *authContext) lookup(uri string) (served, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.files[uri]
	return s, ok
}

func (c *authContext) store(uri string, s served) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[uri] = s
}

// resolve returns the verdicts for files, probing the upstream for the ones
// not cached. Any upstream-served file is reported in the map; a nil map
// means every file is the sidecar's. With unknownOK, an unreachable upstream
// (ErrUnreachable) is no error: each file whose verdict is not cached is
// taken as the sidecar's for this answer and nothing is stored, so the
// upstream is asked again once it answers (see unreachable).
func (o *Overlay) resolve(r *http.Request, caller rewrite.Message, snap *catalog.Snapshot, files []*catalog.File, unknownOK bool) (map[string]served, error) {
	return o.resolveIn(o.context(r, snap), r, caller, files, unknownOK)
}

// unreachableBackoff is how long after a probe found the upstream
// unreachable the overlay stops asking it (with unknownOK): a burst of
// listings then costs one failed dial, not one per file and request.
const unreachableBackoff = time.Second

// resolveIn is resolve within an authorization context already found, so a
// page of skills hashes the caller's credentials once, not once per skill.
func (o *Overlay) resolveIn(c *authContext, r *http.Request, caller rewrite.Message, files []*catalog.File, unknownOK bool) (map[string]served, error) {
	var out map[string]served
	down := unknownOK && o.now().UnixNano() < o.downUntil.Load()
	for _, f := range files {
		s, ok := c.lookup(f.URI)
		if !ok && down {
			continue // verdict unknown: the plugin folder's file, not remembered
		}
		if !ok {
			var err error
			if s, err = o.probe(r, caller, f.URI); err != nil {
				if unknownOK && errors.Is(err, ErrUnreachable) {
					o.downUntil.Store(o.now().Add(unreachableBackoff).UnixNano())
					down = true
					continue
				}
				return nil, err
			}
			c.store(f.URI, s)
		}
		if s.upstream {
			if out == nil {
				out = map[string]served{}
			}
			out[f.URI] = s
		}
	}
	return out, nil
}

// probe asks the upstream for uri. A not-found answer (or an upstream
// without resources) means the sidecar serves it; a refusal of the caller
// is returned as the error so it reaches the caller unchanged.
func (o *Overlay) probe(r *http.Request, caller rewrite.Message, uri string) (served, error) {
	o.Probes.Add(1)
	o.Metrics.DigestProbe()
	m, err := o.up.Call(r, caller, "resources/read", map[string]json.RawMessage{"uri": mustJSON(uri)})
	if err != nil {
		return served{}, err
	}
	if m.Kind != rewrite.KindResponse {
		return served{}, nil // not found, not supported, or failed: the sidecar serves its own
	}
	s, err := servedOf(uri, m.Result)
	o.Metrics.Hashed(s.size)
	return s, err
}

// servedOf digests the bytes a resources/read result serves: the UTF-8
// bytes of text, or the decoded bytes of blob (SEP-2640). result comes from
// a message already checked to be JSON, so it is walked by offsets: a blob
// is decoded in small chunks into the hash, with no copy of its bytes, and
// plain text is hashed where it lies.
func servedOf(uri string, result json.RawMessage) (served, error) {
	raw, _ := rewrite.GetKey(result, []string{"contents"})
	c, ok := rewrite.FirstElement(raw)
	if !ok {
		return served{}, fmt.Errorf("upstream resources/read %s: no contents", uri)
	}
	h := sha256.New()
	var size int64
	var text []byte
	if t, ok := rewrite.GetKey(c, []string{"text"}); ok {
		if text, ok = rewrite.StringBytes(t); !ok {
			return served{}, fmt.Errorf("upstream resources/read %s: text is not a string", uri)
		}
		h.Write(text)
		size = int64(len(text))
	} else if b, ok := rewrite.GetKey(c, []string{"blob"}); ok {
		enc, ok := rewrite.StringBytes(b)
		if !ok {
			return served{}, fmt.Errorf("upstream resources/read %s: blob is not a string", uri)
		}
		// A literal with no escapes decodes to its own bytes; every escape
		// shortens it (invalid UTF-8 lengthens it, but is no base64
		// either). Equal lengths mean enc holds no line breaks, so
		// hashBase64 need not look for them.
		n, err := hashBase64(h, enc, len(enc) == len(b)-2)
		if err != nil {
			return served{}, fmt.Errorf("upstream resources/read %s: blob: %w", uri, err)
		}
		size = n
	} else {
		return served{}, fmt.Errorf("upstream resources/read %s: neither text nor blob", uri)
	}
	s := served{upstream: true, digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), size: size}
	if strings.HasSuffix(uri, "/SKILL.md") {
		fm, _, err := catalog.ParseFrontmatter(text)
		if err != nil {
			return served{}, fmt.Errorf("upstream SKILL.md %s: %w", uri, err)
		}
		s.frontmatter = fm
	}
	return s, nil
}

// hashChunk is how much base64 hashBase64 decodes at a time: a multiple of
// 4, so every chunk but the last decodes on its own, and small enough that
// the decoded bytes are still in the CPU's first-level cache when they are
// hashed (8 KiB ran about 20% faster than 32 KiB here).
const hashChunk = 8 << 10

// hashBase64 writes the standard-base64 decoding of enc to w, a chunk at a
// time, and returns the decoded length. Like base64.StdEncoding it ignores
// "\r" and "\n" (which a JSON string can hold only escaped, so plain says
// there are none); such an encoding is first copied without them, so
// chunks stay aligned.
func hashBase64(w io.Writer, enc []byte, plain bool) (int64, error) {
	if !plain && (bytes.IndexByte(enc, '\r') >= 0 || bytes.IndexByte(enc, '\n') >= 0) { // not ContainsAny: no SIMD
		clean := make([]byte, 0, len(enc))
		for _, c := range enc {
			if c != '\r' && c != '\n' {
				clean = append(clean, c)
			}
		}
		enc = clean
	}
	var buf [hashChunk / 4 * 3]byte
	var total int64
	for off := 0; off < len(enc); off += hashChunk {
		chunk := enc[off:min(off+hashChunk, len(enc))]
		n, err := decodeBase64(buf[:], chunk)
		if err != nil {
			if ce, ok := err.(base64.CorruptInputError); ok {
				err = base64.CorruptInputError(int64(ce) + int64(off))
			}
			return total, err
		}
		w.Write(buf[:n])
		total += int64(n)
		if n < len(buf) && off+hashChunk < len(enc) {
			// Padding ended a chunk that is not the last: the rest is
			// data after the end of the encoding.
			return total, base64.CorruptInputError(int64(off + len(chunk)))
		}
	}
	return total, nil
}

// observe records the bytes of a forwarded read of a catalog URI: a reply
// that differs from the published verdict replaces it and counts a mismatch.
func (o *Overlay) observe(r *http.Request, snap *catalog.Snapshot, uri string, reply []byte) {
	m, err := rewrite.ParseMessage(reply)
	if err != nil || m.Kind != rewrite.KindResponse {
		return
	}
	s, err := servedOf(uri, m.Result)
	if err != nil {
		return
	}
	o.Metrics.Hashed(s.size)
	c := o.context(r, snap)
	if old, ok := c.lookup(uri); ok && (old.digest != s.digest || old.size != s.size) {
		o.Mismatches.Add(1)
		o.Metrics.DigestMismatch()
	}
	c.store(uri, s)
}

// entries returns the encoded entries of skills in v from index from to to,
// with the upstream's verdicts applied for this caller; changed tells
// whether any differs from the catalog's own.
func (o *Overlay) entries(r *http.Request, caller rewrite.Message, v *view, from, to int, unknownOK bool) (_ []json.RawMessage, changed bool, _ error) {
	out := v.skillEntries[from:to:to]
	copied := false
	c := o.context(r, v.snap)
	for i := from; i < to; i++ {
		sk, _ := v.snap.Skill(v.skillURIs[i])
		over, err := o.resolveIn(c, r, caller, sk.Files, unknownOK)
		if err != nil {
			return nil, false, err
		}
		if over == nil {
			continue
		}
		if !copied {
			out, copied = append([]json.RawMessage(nil), out...), true
		}
		out[i-from] = encodeSkillServed(sk, over)
	}
	return out, copied, nil
}

// encodeSkillServed is encodeSkill with the upstream's bytes winning for the
// files it serves.
func encodeSkillServed(sk *catalog.Skill, over map[string]served) []byte {
	e := skillEntry{URI: sk.URI, Frontmatter: sk.Frontmatter, Resources: make([]fileRef, 0, len(sk.Files))}
	for _, f := range sk.Files {
		ref := fileRef{URI: f.URI, Digest: f.Digest, Size: f.Size}
		if s, ok := over[f.URI]; ok {
			ref.Digest, ref.Size = s.digest, s.size
			if f.URI == sk.URI && s.frontmatter != nil {
				e.Frontmatter = s.frontmatter
			}
		}
		e.Resources = append(e.Resources, ref)
	}
	return mustJSON(e)
}
