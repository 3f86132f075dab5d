package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/plainhead"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The relay is the proxy's own forwarding loop, in place of
// httputil.ReverseProxy. It does the same job (hop-by-hop headers,
// X-Forwarded-*, trailers, flushing streamed replies) with fewer system
// calls, which is most of what a proxy costs on a small pod:
//
//   - a JSON reply of unknown length (go-sdk sends them chunked) that ends
//     within the first buffer goes to the client as one write with a
//     Content-Length, instead of a write per chunk and one for the final
//     empty chunk;
//   - headers go out with the first bytes of the body when those came with
//     them, instead of being flushed on their own by a timer goroutine;
//   - the outbound request is built once, not cloned and then rewritten.
//
// Protocol upgrades are not relayed: Upgrade is a hop-by-hop header and is
// dropped, as nginx does unless told otherwise; MCP does not use them.

// hopHeaders are the hop-by-hop headers of RFC 9110 §7.6.1 and their
// historical kin, removed in both directions along with any header the
// Connection header names.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			switch sf = textproto.TrimString(sf); {
			case sf == "":
			case plainhead.EqualFold(sf, "keep-alive"):
				// The usual token (go-sdk's SSE replies, Node's requests),
				// in hopHeaders already: Del would canonicalize a lower
				// case spelling into a new string.
			case plainhead.EqualFold(sf, "close"):
				delete(h, "Close")
			default:
				h.Del(sf)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// outbound builds the request to the upstream: exactly the upstream's URL
// (whatever path the client used), the upstream's own Host (a go-sdk server
// on loopback answers 403 to a foreign one), the client's end-to-end headers
// (Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method,
// Mcp-Name, Last-Event-ID, traceparent, …) and X-Forwarded-*. body is the
// request body already read, or nil to stream r.Body.
func (p *Proxy) outbound(ctx context.Context, r *http.Request, pl *plan, body []byte) *http.Request {
	// The request lives in the plan, which lives as long as it: the copy
	// WithContext makes stays on the stack (one allocation less).
	out := &pl.out
	*out = *r.WithContext(ctx)
	out.URL = p.target
	out.Host = ""
	out.RequestURI = ""
	out.Close = false
	out.Proto, out.ProtoMajor, out.ProtoMinor = "HTTP/1.1", 1, 1
	out.Trailer = nil
	out.TransferEncoding = nil

	h := p.headers.get(len(r.Header) + 3)
	for k, vv := range r.Header {
		h[k] = vv // shared, never modified: Set and Del replace the slice
	}
	removeHopHeaders(h)
	if httpguts.HeaderValuesContainsToken(r.Header["Te"], "trailers") {
		h["Te"] = []string{"trailers"}
	}
	onbehalf.SetForwardedIn(h, r, &pl.forwarded)
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = noUserAgent // no Go default in its place
	}
	if pl.edits() || pl.observe != nil {
		// A reply the proxy may rewrite or observe must come uncompressed.
		delete(h, "Accept-Encoding")
	}
	out.Header = h

	switch {
	case len(body) > 0:
		hop.SetBody(out, &pl.body.MemBody, body) // the body with the plan: one allocation less
		pl.body.msg = nil
		if pl.kind == kindSingle {
			pl.body.msg = &pl.one[0]
		}
		out.Body = &pl.body // the same bytes, and the message parsed from them
	case body != nil || r.ContentLength == 0:
		out.Body, out.GetBody, out.ContentLength = nil, nil, 0
	default:
		// A non-POST with a body: streamed, and never closed under the
		// server's feet (it closes the inbound body itself).
		out.Body, out.GetBody = io.NopCloser(r.Body), nil
	}
	return out
}

// noUserAgent is the empty User-Agent an outbound request carries when
// its client sent none, shared: a header's slice is replaced (Set) or
// copied as it grows (Add, capacity 1), never written in place.
var noUserAgent = []string{""}

// headerPool recycles outbound header maps. A POST's map is filled from
// the client's headers and only read below (a transport that must change
// headers clones them first, as the era bridge does, and keeps a copy of
// what it keeps); by the RoundTripper contract it is free again once the
// reply's body is closed.
// A map cleared keeps its room, so a refilled one allocates nothing where
// a new one cost two allocations per request.
type headerPool struct{ p sync.Pool }

// maxPooledHeaders bounds the maps kept: one grown by a request with an
// unusual number of headers is left to the collector.
const maxPooledHeaders = 32

func (hp *headerPool) get(size int) http.Header {
	if h, ok := hp.p.Get().(http.Header); ok {
		return h
	}
	return make(http.Header, size)
}

func (hp *headerPool) put(h http.Header) {
	if len(h) > maxPooledHeaders {
		return
	}
	clear(h)
	hp.p.Put(h)
}

// relay forwards r to the upstream and the reply to w.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, pl *plan, body []byte) {
	// The client's own request rides along, so that whoever keeps a
	// table for callers below (the era bridge) knows whose place it is
	// (package caller).
	ctx := caller.Bind(&pl.caller, r.Context(), r)
	var detach *detachable
	if pl.kind == kindGet {
		// A standalone GET stream may outlive this handler (see detach.go):
		// its upstream request is tied to the client by hand until then.
		detach = newDetachable(ctx, pl)
		defer detach.cancelUnlessDetached()
		ctx = detach.ctx
	}
	out := p.outbound(ctx, r, pl, body)
	// Only a POST's map goes back to the pool, and only after a reply:
	// deferred first, so run last, after every close of the reply's body
	// below. A GET stream's request may be read below while the stream
	// lasts, a transport that failed may still be reading it, and so may
	// net/http's Transport, which carries https and upgrades for hop,
	// after it returns a reply (found in review).
	reuse := r.Method == http.MethodPost && hop.Carries(out)
	defer func() {
		if reuse {
			p.headers.put(out.Header)
		}
	}()
	resp, err := p.roundTrip(out, pl)
	if err != nil {
		if resp = answered(err, out, pl); resp == nil {
			reuse = false
			p.handleUpstreamError(w, out, pl, err)
			return
		}
	}
	if reuse && pl.observe == nil && pl.listen == nil {
		// Nothing here keeps the reply's header map once the relay is
		// done (its fields are copied into w's header, the values shared,
		// which Release allows): back to hop for a later reply. Deferred
		// before the body's close below, so run after it.
		defer hop.Release(resp)
	}
	pl.upstreamStatus = resp.StatusCode
	// Whether the body's first bytes came with the headers (as go-sdk's
	// replies do): then both leave in one write. Asked before the response
	// hooks wrap the body.
	arrived := rewrite.Arrived(resp.Body)
	mt := mediaType(resp.Header.Get("Content-Type")) // once: parsing it allocates
	if err := p.modifyResponse(r, resp, pl, mt); err != nil {
		resp.Body.Close()
		p.handleUpstreamError(w, out, pl, err)
		return
	}
	removeHopHeaders(resp.Header)
	if detach != nil && resp.StatusCode == http.StatusMethodNotAllowed && p.serveOwnStream(w, r, pl.session) {
		resp.Body.Close()
		return
	}
	if ownsListenReply(pl.listen, resp, mt) {
		p.relayListen(w, r, pl, resp, mt)
		return
	}
	if detach != nil && p.opts.Notify != nil && pl.session != "" {
		// Whose place of the hub's streams a detached stream takes: its
		// relay outlives r.
		pl.who = p.opts.Callers.Of(r)
	}
	if detach != nil && p.detach(w, resp, mt, detach) {
		return
	}
	defer resp.Body.Close()
	if pl.get() && resp.StatusCode == http.StatusOK && mt == "text/event-stream" {
		var end func()
		w, end = p.withNotify(w, pl.session, p.opts.Callers.Of(r))
		defer end()
	}

	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	if len(resp.Trailer) > 0 {
		names := make([]string, 0, len(resp.Trailer))
		for k := range resp.Trailer {
			names = append(names, k)
		}
		h["Trailer"] = []string{strings.Join(names, ", ")}
	}
	announced := len(resp.Trailer)

	streamed := resp.ContentLength < 0 || mt == "text/event-stream"
	var pending []byte
	if streamed && announced == 0 && mt == "application/json" {
		// One JSON-RPC message of unknown length: usually whole within one
		// buffer, and then it leaves as one write with its length.
		buf := p.buffers.Get()
		defer p.buffers.Put(buf)
		n, err := readFull(resp.Body, buf)
		switch {
		case err == io.EOF:
			h["Content-Length"] = []string{strconv.Itoa(n)}
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(buf[:n])
			return
		case err != nil:
			p.abort(r, pl, err)
		}
		pending = buf[:n]
	}
	w.WriteHeader(resp.StatusCode)
	if streamed && len(pending) == 0 && !arrived {
		// A quiet stream (an idle GET, a slow tool): the client gets the
		// headers now, not with the first event.
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	fl := atEnd
	switch {
	case streamed && pl.get():
		fl = eachRead // a GET stream's writer may hold the sidecar's own events
	case streamed:
		fl = eachReadButLast // the handler ends with the reply
	}
	if err := copyBody(w, resp.Body, pending, fl, p.buffers); err != nil {
		p.abort(r, pl, err)
	}

	if len(resp.Trailer) == announced {
		for k, vv := range resp.Trailer {
			h[k] = vv
		}
		return
	}
	if f, ok := w.(http.Flusher); ok && fl == eachReadButLast {
		// Trailers the upstream did not announce: the reply, which the
		// last read left unflushed, must go chunked to carry them, and
		// a server that has not sent the head gives a short reply a
		// Content-Length instead.
		f.Flush()
	}
	for k, vv := range resp.Trailer {
		for _, v := range vv {
			h.Add(http.TrailerPrefix+k, v)
		}
	}
}

// answered is the reply a transport below (the era bridge) gave in the
// upstream's place, as err: its value becomes the reply here, with the
// caller's id, and goes on as the upstream's would (the response hooks
// too). Nil when err is a failure. Apart from relay so that errors.As's
// target is only allocated when there is an error to look into.
func answered(err error, out *http.Request, pl *plan) *http.Response {
	var answer *reply.Answer
	if !errors.As(err, &answer) {
		return nil
	}
	return answer.Response(out, pl.id)
}

// buffered is how many bytes src holds that a Read returns without
// waiting for the upstream: what the body and the wrappers the response
// hooks put on it report (package hop's body: what has arrived and not been
// read), 0 for a reader that does not say.
func buffered(src io.Reader) int {
	b, ok := src.(interface{ Buffered() int })
	if !ok {
		return 0
	}
	return b.Buffered()
}

// readFull reads into buf until it is full (nil error) or the body ends
// (io.EOF, with what came before it). Not io.ReadFull: that reports a
// short clean end as io.ErrUnexpectedEOF, the error a cut chunked body
// gives, and the two must not be confused.
func readFull(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// quietRead is the buffer a streamed reply waits with, large enough for
// the notifications a stream mostly carries. A stream spends most
// of its life waiting for the next event, and a buffer held across that
// wait is held per open stream: a pooled 32 KiB one would be most of an
// idle stream's cost. A read that fills it switches to a pooled buffer
// until the stream goes quiet again.
const quietRead = 512

// flushing is when copyBody flushes what it wrote to the client.
type flushing int

const (
	// atEnd: a body of known length, which the server sends as its buffer
	// fills and at the handler's end.
	atEnd flushing = iota
	// eachRead: a stream, flushed whenever src has nothing more buffered.
	eachRead
	// eachReadButLast: eachRead, except that the bytes the last read
	// brought with the end of src are left for the server, which sends
	// them with the end of the reply (HTTP/1.1's last chunk) in one write:
	// for a reply the handler ends as soon as src does.
	eachReadButLast
)

// copyBody copies what is pending and then the rest of src to w. A
// streamed reply is flushed whenever src has nothing more buffered, so no
// event waits for the next one; what src has buffered (bytes the upstream
// already sent, several events of a burst) is read first and leaves in one
// write and one flush, as nginx's unbuffered relay writes what one read
// brought (up to the pooled buffer's 32 KiB, which also bounds what a slow
// client holds). A client that went away ends the copy quietly; an
// upstream read error is returned.
func copyBody(w http.ResponseWriter, src io.Reader, pending []byte, fl flushing, pool *bufferPool) error {
	f, _ := w.(http.Flusher)
	streamed := fl != atEnd
	flush := streamed && f != nil
	write := func(b []byte, last bool) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		if flush && !(last && fl == eachReadButLast) {
			f.Flush()
		}
		return true
	}
	if len(pending) > 0 && !write(pending, false) {
		return nil
	}
	var buf, quiet, big []byte
	defer func() {
		if big != nil {
			pool.Put(big)
		}
		if quiet != nil {
			pool.Put(quiet)
		}
	}()
	if streamed {
		quiet = pool.GetQuiet()
		buf = quiet
	} else {
		big = pool.Get()
		buf = big
	}
	for {
		n, err := src.Read(buf)
		for streamed && err == nil && n > 0 && buffered(src) > 0 {
			if n == len(buf) {
				if big != nil {
					break // full: a slow client holds at most this much
				}
				big = pool.Get()
				copy(big, buf[:n])
				buf = big
			}
			var m int
			m, err = src.Read(buf[n:])
			n += m
		}
		if n > 0 && !write(buf[:n], err == io.EOF) {
			return nil
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case quiet == nil:
		case big == nil && n == len(buf): // a burst: read it in big pieces
			big = pool.Get()
			buf = big
		case big != nil && n < quietRead: // quiet again: wait with the small one
			pool.Put(big)
			big, buf = nil, quiet
		}
	}
}

// abort ends a reply whose headers are already sent after the upstream
// failed mid-body: net/http then cuts the connection, so the client sees a
// truncated reply and not a clean end (httputil does the same). Unless the
// client itself went away, the error goes into the plan for the request's
// one log line, which ServeHTTP writes as the panic passes.
func (p *Proxy) abort(r *http.Request, pl *plan, err error) {
	if r.Context().Err() == nil && !errors.Is(err, context.Canceled) {
		pl.err = fmt.Errorf("upstream reply cut short: %w", err)
	}
	panic(http.ErrAbortHandler)
}
