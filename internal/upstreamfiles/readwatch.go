package upstreamfiles

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// readWatch is the rewrite.Observer of a forwarded resources/read of a
// catalog URI: each message of the reply goes through one readScan as it
// passes, and what the read served is published only when the reply ended
// cleanly, every message in it was valid and exactly one answered the
// request (any message whose id a client could match to the request's:
// replyid.go). Anything else (a cut reply, bytes that are no JSON-RPC message,
// two answers) publishes nothing, and the next listing learns the file its
// own way. The client gets the upstream's bytes either way: the watch
// never changes them.
type readWatch struct {
	o    *Overlay
	r    *http.Request
	snap *catalog.Snapshot
	uri  string
	scan *readScan

	pending  bool // bytes of a message not yet ended
	spoiled  bool
	answers  int
	outcome  scanOutcome
	verdict  Served
	finished bool
}

// WatchRead returns the observer of a forwarded resources/read of uri
// (in snap, for r's caller, the request's id id): what the read served is
// published once its reply ended whole.
func (o *Overlay) WatchRead(r *http.Request, snap *catalog.Snapshot, uri string, id []byte) rewrite.Observer {
	scan := newReadScan(uri, bytes.Clone(id))
	scan.portability = o.FrontmatterPortability
	return &readWatch{o: o, r: r, snap: snap, uri: uri, scan: scan}
}

// Write implements rewrite.Observer.
func (w *readWatch) Write(p []byte) (int, error) {
	if len(p) > 0 && !w.spoiled {
		w.pending = true
		w.scan.Write(p)
	}
	return len(p), nil
}

// EndMessage implements rewrite.Observer. A message no client reads (an
// SSE event of another type) does not count; one that some clients read
// and others ignore spoils the observation when it could be the reply.
func (w *readWatch) EndMessage(d rewrite.Dispatch) {
	if !w.pending || w.spoiled {
		return // an event without data is no message (SSE)
	}
	w.pending = false
	out, s := w.scan.End()
	switch {
	case d == rewrite.DispatchNone:
	case out == scanInvalid:
		w.spoiled = true
	case out == scanOther: // a notification or a server request in the stream
	case d == rewrite.DispatchSome:
		w.spoiled = true
	default:
		w.answers++
		w.outcome, w.verdict = out, s
	}
}

// Done implements rewrite.Observer: it publishes what the reply served.
func (w *readWatch) Done(clean bool) {
	if w.finished {
		return
	}
	w.finished = true
	if !clean || w.pending || w.spoiled || w.answers != 1 {
		return
	}
	switch w.outcome {
	case scanNotFound:
		// Listed, but not found for this caller (either era's code): the
		// plugin's file from the next request on, as a read of the
		// overlay's own would find. A refusal stores nothing.
		w.o.context(w.r, w.snap).store(w.uri, Served{})
	case scanServed:
		w.o.Metrics.HashedBytes(w.verdict.Size)
		w.o.learn(w.r, w.snap, w.uri, w.verdict)
	}
}

// LearnRead publishes what a resources/read of uri that the sidecar made
// itself on r's caller's behalf served (the host-compat prompt and loading
// tool read a SKILL.md the upstream serves this way): result is the
// reply's result member, already checked to be JSON. The bytes a caller
// takes that way count as a forwarded read's do, so the digests published
// next are theirs. A result with no usable contents is an error and
// publishes nothing.
func (o *Overlay) LearnRead(r *http.Request, snap *catalog.Snapshot, uri string, result json.RawMessage) error {
	s, err := servedOf(uri, result, o.FrontmatterPortability)
	if err != nil {
		return err
	}
	o.Metrics.HashedBytes(s.Size)
	o.learn(r, snap, uri, s)
	return nil
}

// learn stores verdict, what uri served r's caller, counting a digest or
// size that differs from what the caller was told.
func (o *Overlay) learn(r *http.Request, snap *catalog.Snapshot, uri string, verdict Served) {
	c := o.context(r, snap)
	if old, ok := c.lookup(uri); ok && (old.Digest != verdict.Digest || old.Size != verdict.Size) {
		o.Metrics.DigestMismatch()
	}
	c.store(uri, verdict)
}
