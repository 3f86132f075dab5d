package bridge

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/childproc"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

func probe(t *testing.T, h http.Handler) Eras {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	d := &Detector{URL: u, Client: srv.Client()}
	e, err := d.Probe(context.Background())
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	return e
}

// Real go-sdk v1.8.0 servers: stateful is legacy only; stateless answers
// both a 2026-07-28 server/discover and an initialize.
func TestProbeGoSDK(t *testing.T) {
	if got := probe(t, demo.Handler(nil)).Label(); got != "legacy" {
		t.Errorf("stateful go-sdk: %s, want legacy", got)
	}
	if got := probe(t, demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true})).Label(); got != "dual" {
		t.Errorf("stateless go-sdk: %s, want dual", got)
	}
	if got := probe(t, demo.BothEras()).Label(); got != "dual" {
		t.Errorf("both-era go-sdk: %s, want dual", got)
	}
}

// A server that refuses a modern probe with a body no modern server sends
// (server-everything's "Server not initialized") is asked initialize, and
// the probe's session is ended with DELETE.
func TestProbeFallsBackToInitialize(t *testing.T) {
	var deleted atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			if r.Header.Get("Mcp-Session-Id") == "s1" {
				deleted.Add(1)
			}
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(string(b), `"initialize"`) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"e","version":"1"}}}`)
	})
	e := probe(t, h)
	if e.Label() != "legacy" || e.Via != "initialize" || e.LegacyVersion("") != "2025-03-26" {
		t.Errorf("got %+v", e)
	}
	if deleted.Load() != 1 {
		t.Errorf("probe session deleted %d times, want 1", deleted.Load())
	}
}

// A modern-only server (written from the 2026-07-28 spec: server/discover
// answers, initialize is an unknown method) is modern.
func TestProbeModernOnly(t *testing.T) {
	e := probe(t, modernOnly())
	if e.Label() != "modern" {
		t.Errorf("got %+v", e)
	}
}

// modernOnly is a minimal 2026-07-28-only server for era probes.
func modernOnly() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), `"server/discover"`) {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","error":{"code":-32601,"message":"Method not found"}}`)
	})
}

// TestProbedOnlyOnceAnswered: a probe that never reached the upstream (its
// port closed: the sidecar started first, as a native sidecar does) does
// not count as probed, so readiness keeps waiting; once the upstream
// listens and answers, Probed turns true (found in review: it turned true
// after the refused connection, and the pod was ready with the bridge idle).
func TestProbedOnlyOnceAnswered(t *testing.T) {
	addr, err := childproc.FreeAddr() // nothing listens here yet, and nothing takes it before the upstream does
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://" + addr + "/mcp")
	var probes atomic.Int32
	d := &Detector{URL: u, RetryInterval: 20 * time.Millisecond,
		Client: &http.Client{Transport: countingTransport{&probes, http.DefaultTransport}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	for probes.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	if d.Probed() {
		t.Fatalf("Probed() = true after %d probes that never reached the upstream", probes.Load())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: demo.Handler(nil)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	testwait.For(t, time.Minute, d.Probed, "Probed() to turn true once the upstream answered")
	if e := d.Current(); !e.Known || !e.Legacy {
		t.Errorf("eras %+v once answered, want the stateful demo's legacy era", e)
	}
}

type countingTransport struct {
	n    *atomic.Int32
	next http.RoundTripper
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestDetectorOnce: with Once (a stdio upstream) Run returns once the
// eras are known, so a legacy-only stdio server is not started again for
// an initialize probe every Interval; without it the probes go on.
func TestDetectorOnce(t *testing.T) {
	srv := httptest.NewServer(demo.Handler(nil)) // stateful go-sdk: legacy only, so each probe ends with an initialize
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	start := func(once bool) (*Detector, *atomic.Int32, context.CancelFunc, <-chan struct{}) {
		var probes atomic.Int32
		d := &Detector{URL: u, Interval: 2 * time.Millisecond, Once: once,
			Client: &http.Client{Transport: countingTransport{&probes, srv.Client().Transport}}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		return d, &probes, cancel, done
	}
	// Without Once the probes go on: a discover, an initialize and its
	// DELETE each time, well past the first.
	d, probes, cancel, done := start(false)
	for probes.Load() < 30 {
		select {
		case <-done:
			t.Fatalf("without Once Run returned after %d requests", probes.Load())
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	<-done
	// With Once, Run returns on its own after the first probe, and that
	// probe's requests are all there are.
	d, probes, cancel, done = start(true)
	defer cancel()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatalf("with Once Run still probing after %d requests", probes.Load())
	}
	if e := d.Current(); !e.Known || !e.Legacy {
		t.Fatalf("with Once: eras %+v, want the stateful demo's legacy era", e)
	}
	if n := probes.Load(); n > 3 {
		t.Errorf("with Once: %d probe requests, want one probe's (discover, initialize, DELETE)", n)
	}
}

// TestDetectorOnceWaitsForASettledProbe: with Once, a probe whose
// discover found only 2026-07-28 and whose initialize failed with 5xx (a
// stdio server whose process could not start yet) does not end the
// probes: the next one learns that the server is dual, and only then Run
// returns. A modern-only server, whose initialize the server itself
// refuses below 500, settles at once.
func TestDetectorOnceWaitsForASettledProbe(t *testing.T) {
	var inits atomic.Int32
	dual := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodDelete:
		case strings.Contains(string(b), `"server/discover"`):
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`)
		case inits.Add(1) == 1:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "no process could start")
		default:
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"d","version":"1"}}}`)
		}
	})
	for _, c := range []struct {
		name      string
		h         http.Handler
		want      string
		minProbes int32
	}{
		{"dual, first initialize 503", dual, "dual", 2},
		{"modern only", modernOnly(), "modern", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			d := &Detector{URL: u, Client: srv.Client(), Once: true, Interval: 2 * time.Millisecond, RetryInterval: 2 * time.Millisecond}
			done := make(chan struct{})
			go func() { d.Run(context.Background()); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute): // a hang guard only
				t.Fatalf("Run still probing; eras %+v", d.Current())
			}
			if got := d.Current().Label(); got != c.want {
				t.Errorf("eras %s when Run returned, want %s", got, c.want)
			}
			if c.minProbes > 0 && inits.Load() < c.minProbes {
				t.Errorf("%d initialize probes, want at least %d", inits.Load(), c.minProbes)
			}
		})
	}
}
