package bridge

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
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
