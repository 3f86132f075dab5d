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
type statusWriter struct {
	http.ResponseWriter
	status int
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
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
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
	t.m.Upstream(planFrom(r.Context()).method, time.Since(start))
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
