package proxy

import (
	"io"
	"net/http"
	"sync"
	"time"

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
}

// renew moves the write deadline to the send timeout from now.
func (w *statusWriter) renew() {
	if w.send <= 0 || w.noDL {
		return
	}
	if http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.send)) != nil {
		w.noDL = true
	}
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

// timedTransport records the upstream's time to response headers.
type timedTransport struct {
	rt http.RoundTripper
	m  *metrics.Metrics
}

func (t timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.m == nil {
		return t.rt.RoundTrip(r)
	}
	start := time.Now()
	resp, err := t.rt.RoundTrip(r)
	t.m.UpstreamResponse(planFrom(r.Context()).method, time.Since(start))
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

// bufferPool recycles the relay's 32 KiB copy buffers across requests instead
// of allocating one per response.
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

func (bp *bufferPool) Get() []byte { return *(bp.p.Get().(*[]byte)) }

func (bp *bufferPool) Put(b []byte) {
	if cap(b) == 32<<10 {
		bp.p.Put(&b)
	}
}
