package proxy

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

// statusWriter remembers the status a handler sent. It unwraps for
// http.ResponseController, so the relay still flushes through it.
//
// It also keeps the send timeout: every write and flush first moves the
// connection's write deadline to send from now, so a client that accepts
// no bytes for that long fails the write (nginx's send_timeout, which
// times each write, not the whole reply) and the relay lets go of the
// upstream.
type statusWriter struct {
	http.ResponseWriter
	status int
	sent   bool          // a body byte was written or the head flushed: the client may have had something
	send   time.Duration // the send timeout; 0: none
	noDL   bool          // the writer takes no deadline (HTTP/2 handled elsewhere, a test recorder)
	set    time.Time     // when the deadline was last moved; zero: not yet
}

// writeTimeouter is a writer that bounds its writes by a timeout itself,
// moving the deadline lazily (package h1's).
type writeTimeouter interface {
	SetWriteTimeout(time.Duration) error
}

// renew moves the write deadline to the send timeout from now, unless it
// was moved within the last lazydeadline.Delay of it: by the writer itself
// where it can (package h1's, lazily across the connection's requests),
// else here, within the reply.
func (w *statusWriter) renew() {
	if w.send <= 0 || w.noDL {
		return
	}
	if tw, ok := w.ResponseWriter.(writeTimeouter); ok {
		w.noDL = tw.SetWriteTimeout(w.send) != nil
		return
	}
	now := time.Now()
	if !lazydeadline.Due(w.set, now, w.send) {
		return
	}
	if http.NewResponseController(w.ResponseWriter).SetWriteDeadline(now.Add(w.send)) != nil {
		w.noDL = true
	}
	w.set = now
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if len(b) > 0 {
		w.sent = true
	}
	w.renew()
	return w.ResponseWriter.Write(b)
}

// outcome is the status to record for the reply: its status, or 0
// (aborted) when it was cut short before anything of it was written, since
// then the client received not a byte (net/http sends a head only with
// the first body bytes or a flush, and drops it on an abort).
func (w *statusWriter) outcome(aborted bool) int {
	if aborted && !w.sent {
		return 0
	}
	return w.status
}

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if w.status != 0 {
		w.sent = true
	}
	w.renew()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// roundTrip sends out to the upstream and records the upstream's time to
// response headers under the method pl names. The plan is passed, not
// carried in out's context: a context value costs an allocation per
// request, and nothing below the proxy needs the plan.
func (p *Proxy) roundTrip(out *http.Request, pl *plan) (*http.Response, error) {
	if p.opts.Metrics == nil {
		return p.opts.Transport.RoundTrip(out)
	}
	start := time.Now()
	resp, err := p.opts.Transport.RoundTrip(out)
	p.opts.Metrics.UpstreamResponse(pl.method, time.Since(start))
	return resp, err
}

// countedBody marks the end of an SSE stream in the active streams gauge.
type countedBody struct {
	io.ReadCloser
	m    *metrics.Metrics
	once sync.Once
}

func (b *countedBody) Close() error {
	b.once.Do(b.m.StreamClosed)
	return b.ReadCloser.Close()
}

// Buffered passes on what the body holds (copyBody's flush policy).
func (b *countedBody) Buffered() int { return buffered(b.ReadCloser) }

// copyBuffer is the size of the relay's pooled copy buffers.
const copyBuffer = 32 << 10

// bufferPool recycles the relay's 32 KiB copy buffers across requests instead
// of allocating one per response. It pools the arrays themselves: putting
// back a pointer to a slice header would cost an allocation per Put.
type bufferPool struct{ p, quiet sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{
		p:     sync.Pool{New: func() any { return new([copyBuffer]byte) }},
		quiet: sync.Pool{New: func() any { return new([quietRead]byte) }},
	}
}

func (bp *bufferPool) Get() []byte { return bp.p.Get().(*[copyBuffer]byte)[:] }

// GetQuiet returns a buffer of quietRead bytes, for a stream to wait with
// (copyBody).
func (bp *bufferPool) GetQuiet() []byte { return bp.quiet.Get().(*[quietRead]byte)[:] }

// Put takes back a buffer Get or GetQuiet returned (any other slice is
// dropped).
func (bp *bufferPool) Put(b []byte) {
	switch cap(b) {
	case copyBuffer:
		bp.p.Put((*[copyBuffer]byte)(b[:copyBuffer]))
	case quietRead:
		bp.quiet.Put((*[quietRead]byte)(b[:quietRead]))
	}
}
