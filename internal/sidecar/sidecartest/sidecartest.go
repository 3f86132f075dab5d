// Package sidecartest starts the sidecar for tests exactly as the binary
// assembles it (package sidecar), in front of a test upstream on loopback,
// and owns the helpers the integration tests share: one POST, one WaitFor,
// one caller of either era (client.go). Only tests import it; it must not
// hold assertions of one package's behaviour.
package sidecartest

import (
	"context"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/h1"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// TB is the part of testing.TB the helpers use (production code may not
// import package testing, and this package is built as production code).
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
	TempDir() string
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
	// Listener, when set, wraps the listener the sidecar is served on: for
	// a test that watches what goes out on each connection.
	Listener func(net.Listener) net.Listener
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
	// Server gives the URL and listener; it serves them itself only under
	// http-server net/http (else the sidecar's own server does, as in the
	// binary). Either closes when the test ends.
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
	srv := serve(t, cfg, h, o.Listener)
	return &Sidecar{Sidecar: s, URL: srv.URL + "/mcp", Server: srv, Registry: reg}
}

// serve serves h on loopback until the test ends with the server cfg's
// http-server names, as the binary does. For the sidecar's own the
// httptest.Server is not started: it lends its listener and URL.
func serve(t TB, cfg config.Config, h http.Handler, wrap func(net.Listener) net.Listener) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	if wrap != nil {
		srv.Listener = wrap(srv.Listener)
	}
	if cfg.HTTPServer == "net/http" {
		srv.Start()
		t.Cleanup(srv.Close)
		return srv
	}
	own := &h1.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: cfg.MaxHeaderBytes}
	srv.URL = "http://" + srv.Listener.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = own.Serve(srv.Listener)
	}()
	t.Cleanup(func() {
		_ = own.Close()
		<-done
	})
	return srv
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

// WaitEras waits (see WaitFor) until the sidecar has learned the
// upstream's protocol eras: until then the era bridge passes modern
// requests on untranslated, as it does for an upstream it cannot probe, so
// a test of the bridged behaviour waits first.
func (s *Sidecar) WaitEras(t TB) {
	t.Helper()
	WaitFor(t, time.Minute, func() bool { return s.Eras.Current().Known }, "the sidecar to learn the upstream's eras")
}

// WaitFor polls cond every 20 ms until it holds, and fails the test if it
// still does not after timeout; what names the awaited state in the
// failure. The timeout is a hang guard, not a speed check: give one far
// above what a passing run takes on a loaded machine.
func WaitFor(t TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	testwait.For(t, timeout, cond, what)
}

// Initialize is a legacy-era initialize request (protocol 2025-11-25).
const Initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// Call sends one JSON-RPC body with the headers of hdr (see Post) and
// returns the reply's status, headers and body.
func Call(t TB, u, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	h := http.Header{}
	for k, v := range hdr {
		h.Set(k, v)
	}
	resp, b := Post(t, u, body, h)
	return resp.StatusCode, resp.Header, string(b)
}

// Upstream serves h at /mcp (only) on loopback until the test ends (see
// package testupstream for building h).
func Upstream(t TB, h http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	return testupstream.ServeHandler(t, mux)
}

// WriteTree writes files (slash paths relative to dir, to contents) under
// dir, making the folders they need.
func WriteTree(t TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
