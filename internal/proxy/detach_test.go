package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
)

// detachedSidecar serves h as the upstream behind a proxy and returns the
// proxy and the sidecar's address.
func detachedSidecar(t *testing.T, h http.HandlerFunc) (*proxy.Proxy, string) {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	// Runs first: a stream the sidecar failed to end must not hang Close.
	t.Cleanup(up.CloseClientConnections)
	uu, _ := url.Parse(up.URL)
	p, err := proxy.New(proxy.Options{Upstream: uu})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)
	return p, strings.TrimPrefix(side.URL, "http://")
}

// openStream sends a standalone GET on a fresh connection and reads the
// response head.
func openStream(t *testing.T, addr string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAccept: text/event-stream\r\nMcp-Session-Id: s1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, resp
}

// TestDetachedStreamWire: a standalone GET stream relayed off its handler
// carries the upstream's headers and events exactly, chunked, with
// Connection: close, and ends cleanly when the upstream ends it.
func TestDetachedStreamWire(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	_, addr := detachedSidecar(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
		io.WriteString(w, "id: 1\ndata: {\"a\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "id: 2\ndata: {\"b\":2}\n\n")
	})
	c, resp := openStream(t, addr)
	defer c.Close() // before the upstream's Close waits for its handler
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Mcp-Session-Id") != "s1" || resp.Header.Get("Date") == "" {
		t.Fatalf("head: %d %v", resp.StatusCode, resp.Header)
	}
	if !resp.Close || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("Close %v, Transfer-Encoding %v; want a chunked stream on a connection that closes after it", resp.Close, resp.TransferEncoding)
	}
	br := bufio.NewReader(resp.Body)
	var got strings.Builder
	for range 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(line)
	}
	close(next)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream ended with %v, want a clean end", err)
	}
	if want := "id: 1\ndata: {\"a\":1}\n\nid: 2\ndata: {\"b\":2}\n\n"; got.String()+string(rest) != want {
		t.Fatalf("stream %q, want %q", got.String()+string(rest), want)
	}
}

// TestDetachedStreamClientLeaves: the upstream learns at once that the
// client of an idle detached stream went away, and WaitStreams returns.
func TestDetachedStreamClientLeaves(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	p, addr := detachedSidecar(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	c, resp := openStream(t, addr)
	if !resp.Close {
		t.Fatal("stream not detached (no Connection: close)")
	}
	c.Close()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream still holds the stream of a client that left")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitStreams(ctx); err != nil {
		t.Fatalf("WaitStreams: %v", err)
	}
}

// TestDetachedStreamEndStreams: shutdown ends a detached stream with its
// last chunk, and WaitStreams sees it done.
func TestDetachedStreamEndStreams(t *testing.T) {
	t.Parallel()
	p, addr := detachedSidecar(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	_, resp := openStream(t, addr)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: {}\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	p.EndStreams()
	if rest, err := io.ReadAll(br); err != nil || string(rest) != "\n" {
		t.Fatalf("after EndStreams: %q, %v; want the rest of the event and a clean end", rest, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitStreams(ctx); err != nil {
		t.Fatalf("WaitStreams: %v", err)
	}
}

// TestDetachedStreamIsCountedWhenItEnds: the request metric of a detached
// stream keeps its meaning (arrival to the end of the reply): nothing is
// counted while the stream is open, one GET once it has ended.
func TestDetachedStreamIsCountedWhenItEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(up.CloseClientConnections)
	uu, _ := url.Parse(up.URL)
	reg := prometheus.NewRegistry()
	p, err := proxy.New(proxy.Options{Upstream: uu, Metrics: metrics.New(reg, "test")})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)
	gets := func() uint64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "skills_sidecar_request_duration_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "method" && l.GetValue() == "GET" {
						return m.GetHistogram().GetSampleCount()
					}
				}
			}
		}
		return 0
	}

	_, resp := openStream(t, strings.TrimPrefix(side.URL, "http://"))
	if !resp.Close {
		t.Fatal("stream not detached (no Connection: close)")
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if n := gets(); n != 0 {
		t.Fatalf("%d GET requests counted while the stream is open, want 0", n)
	}
	close(release)
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("stream ended with %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if n := gets(); n != 1 {
		t.Fatalf("%d GET requests counted after the stream ended, want 1", n)
	}
}
