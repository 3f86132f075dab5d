// Package sidecartest starts the sidecar for tests exactly as the binary
// assembles it (package sidecar), in front of a test upstream on loopback,
// and owns the one POST helper the integration tests share. Only tests
// import it.
package sidecartest

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar"
)

// TB is the part of testing.TB the helpers use (production code may not
// import package testing, and this package is built as production code).
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Options say how Start builds the sidecar beyond the defaults.
type Options struct {
	// Config edits the configuration, which starts as config.Defaults()
	// with the upstream set; nil keeps the defaults (auth gate on,
	// upstream files auto).
	Config func(*config.Config)
	// Plugin is the plugin served when Config names no plugin folder.
	Plugin fs.FS
	// Snapshot, when set, is served instead (a test's own watcher).
	Snapshot func() *catalog.Snapshot
	// Wrap, when set, wraps the sidecar's handler: for a test that
	// watches every request come and go.
	Wrap func(http.Handler) http.Handler
	// Environ is a stdio upstream's environment (sidecar.Options.Environ).
	Environ []string
	// SessionKeysInterval is how often the session keys file is read
	// again; 0 means the production default.
	SessionKeysInterval time.Duration
	// Logger receives the sidecar's logs; nil logs nothing.
	Logger *zap.Logger
}

// Sidecar is a running sidecar.
type Sidecar struct {
	*sidecar.Sidecar
	// URL is the MCP endpoint: the server's URL and /mcp.
	URL string
	// Server serves it; it is closed when the test ends.
	Server   *httptest.Server
	Registry *prometheus.Registry
}

// Start builds the sidecar for upstream (a URL) with package sidecar and
// serves it on loopback until the test ends.
func Start(t TB, upstream string, o Options) *Sidecar {
	t.Helper()
	cfg := config.Defaults()
	cfg.Upstream = upstream
	if o.Config != nil {
		o.Config(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reg := prometheus.NewRegistry()
	s, err := sidecar.New(ctx, cfg, sidecar.Options{Registry: reg, Version: "test", Plugin: o.Plugin, Snapshot: o.Snapshot,
		SessionKeysInterval: o.SessionKeysInterval, Logger: o.Logger, Environ: o.Environ})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := s.Handler()
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Sidecar{Sidecar: s, URL: srv.URL + "/mcp", Server: srv, Registry: reg}
}

// client bounds every request of Post, far above what a passing test
// takes, so a hung reply fails the test rather than stalling it. It is a
// hang guard, not a speed check: a 16 MiB read under -race on a loaded
// two-core machine has taken over 30 s.
var client = &http.Client{Timeout: 3 * time.Minute}

// Post sends body to u as an MCP client POSTs a JSON-RPC message
// (Content-Type application/json, Accept of both reply kinds), with the
// headers of h besides, and returns the response with its body read and
// closed.
func Post(t TB, u, body string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range h {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatalf("POST %s: read reply: %v", body, err)
	}
	return resp, b
}

// Header builds a header from name, value pairs.
func Header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// WaitEras waits (at most ten seconds, then fails the test) until the
// sidecar has learned the upstream's protocol eras: until then the era
// bridge passes modern requests on untranslated, as it does for an upstream
// it cannot probe, so a test of the bridged behaviour waits first.
func (s *Sidecar) WaitEras(t TB) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !s.Eras.Current().Known; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the sidecar did not learn the upstream's eras in 10s")
		}
	}
}
