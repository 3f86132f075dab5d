package methods_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// pluginWithAgent is pluginPDF plus an agent that names upstream tools.
func pluginWithAgent() map[string]string {
	files := pluginPDF()
	files["agents/reviewer.md"] = "---\nname: reviewer\ndescription: Reviews PDFs.\ntools: [alpha]\nmodel: sonnet\n---\nReview carefully.\n"
	return files
}

// localCalls are one request of every method the sidecar answers itself.
func localCalls() []struct {
	method string
	params map[string]any
} {
	return []struct {
		method string
		params map[string]any
	}{
		{"skills/list", nil},
		{"skills/get", map[string]any{"uri": "skill://pdf-processing/SKILL.md"}},
		{"agents/list", nil},
		{"agents/get", map[string]any{"name": "reviewer"}},
		{"resources/read", map[string]any{"uri": "skill://pdf-processing/SKILL.md"}},
		{"resources/directory/read", map[string]any{"uri": "skill://pdf-processing"}},
	}
}

func alphaTool() *mcp.Tool {
	return &mcp.Tool{Name: "alpha", Description: "first", InputSchema: map[string]any{"type": "object"}}
}

// TestModernChecks sends each method the sidecar owns on the modern wire
// with one thing broken at a time, and expects the status and code of
// docs/protocol.md §1 from the sidecar itself.
func TestModernChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginWithAgent())
	w := newWatcher(t, dir)
	up := testupstream.Start(t, testupstream.Config{Stateless: true, Tools: []*mcp.Tool{alphaTool()}})
	c := &sidecartest.Caller{T: t, Endpoint: newSidecar(t, up.URL, w.Snapshot, nil), Modern: true}
	delMeta := func(key string) func(http.Header, map[string]any) {
		return func(_ http.Header, req map[string]any) {
			delete(req["params"].(map[string]any)["_meta"].(map[string]any), key)
		}
	}
	setMeta := func(key string, v any) func(http.Header, map[string]any) {
		return func(_ http.Header, req map[string]any) {
			req["params"].(map[string]any)["_meta"].(map[string]any)[key] = v
		}
	}
	setHeader := func(k, v string) func(http.Header, map[string]any) {
		return func(h http.Header, _ map[string]any) { h.Set(k, v) }
	}
	tests := []struct {
		name         string
		edit         func(http.Header, map[string]any)
		status, code int
	}{
		{"missing _meta protocolVersion", delMeta(sidecartest.MetaVersionKey), http.StatusBadRequest, -32602},
		{"missing _meta clientCapabilities", delMeta(sidecartest.MetaCapsKey), http.StatusBadRequest, -32602},
		{"no _meta, modern header", func(_ http.Header, req map[string]any) { delete(req["params"].(map[string]any), "_meta") }, http.StatusBadRequest, -32602},
		{"Mcp-Method mismatch", setHeader("Mcp-Method", "tools/list"), http.StatusBadRequest, -32020},
		{"MCP-Protocol-Version mismatch", setHeader("MCP-Protocol-Version", sidecartest.LegacyVersion), http.StatusBadRequest, -32020},
		{"unsupported version", func(h http.Header, req map[string]any) {
			setMeta(sidecartest.MetaVersionKey, "2099-01-01")(h, req)
			h.Set("MCP-Protocol-Version", "2099-01-01")
		}, http.StatusBadRequest, -32022},
	}
	for _, call := range localCalls() {
		for _, tt := range tests {
			t.Run(call.method+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				c := *c
				c.T = t
				e := c.CallWith(call.method, call.params, tt.edit).Failed(t, call.method+" "+tt.name, tt.status, tt.code)
				if e == nil || tt.code != -32022 {
					return
				}
				var data struct {
					Supported []string `json:"supported"`
					Requested string   `json:"requested"`
				}
				if err := json.Unmarshal(e.Data, &data); err != nil {
					t.Fatalf("-32022 data %s: %v", e.Data, err)
				}
				if diff := cmp.Diff([]string{sidecartest.ModernVersion}, data.Supported); diff != "" || data.Requested != "2099-01-01" {
					t.Errorf("-32022 data = %s, want supported [%s] and requested 2099-01-01", e.Data, sidecartest.ModernVersion)
				}
			})
		}
		// The unbroken request passes, so each failure above is the one
		// thing broken.
		t.Run(call.method+"/unbroken", func(t *testing.T) {
			t.Parallel()
			c := *c
			c.T = t
			c.Call(call.method, call.params).OK(t, call.method, nil)
		})
	}
	t.Run("resources/read/Mcp-Name mismatch", func(t *testing.T) {
		t.Parallel()
		c := *c
		c.T = t
		c.CallWith("resources/read", map[string]any{"uri": "skill://pdf-processing/SKILL.md"}, setHeader("Mcp-Name", "skill://pdf-processing/a.txt")).
			Failed(t, "resources/read Mcp-Name mismatch", http.StatusBadRequest, -32020)
	})
}

// resultFields are the era and caching fields of a result.
type resultFields struct {
	ResultType string                     `json:"resultType"`
	TTLMs      *int64                     `json:"ttlMs"`
	CacheScope *string                    `json:"cacheScope"`
	Meta       map[string]json.RawMessage `json:"_meta"`
}

// TestResultFields checks resultType, ttlMs and cacheScope (defaults and
// configured values) on every result the sidecar answers, in both eras,
// and _meta serverInfo on modern results only.
func TestResultFields(t *testing.T) {
	t.Parallel()
	configs := []struct {
		name  string
		edit  func(*config.Config)
		ttl   int64
		scope string
	}{
		{name: "defaults", ttl: 0, scope: "private"},
		{name: "configured", edit: func(c *config.Config) { c.CacheTTLMs, c.CacheScope = 30000, "public" }, ttl: 30000, scope: "public"},
	}
	for _, ec := range eras() {
		for _, cfg := range configs {
			t.Run(ec.name+"/"+cfg.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				dir := t.TempDir()
				sidecartest.WriteTree(t, dir, pluginWithAgent())
				w := newWatcher(t, dir)
				up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless, Tools: []*mcp.Tool{alphaTool()}})
				c := dialEra(t, ctx, ec, newSidecar(t, up.URL, w.Snapshot, cfg.edit), "")
				// The build's version, as sidecartest gives it to the assembly.
				wantInfo := `{"name":"skills-sidecar","version":"test"}`
				for _, call := range localCalls() {
					var got resultFields
					c.Call(call.method, call.params).OK(t, call.method, &got)
					legacyRead := call.method == "resources/read" && !c.Modern
					cacheable := call.method != "resources/directory/read" && !legacyRead
					if got.ResultType != "complete" && !legacyRead {
						t.Errorf("%s resultType = %q, want complete", call.method, got.ResultType)
					}
					if cacheable {
						if got.TTLMs == nil || *got.TTLMs != cfg.ttl {
							t.Errorf("%s ttlMs = %v, want %d", call.method, got.TTLMs, cfg.ttl)
						}
						if got.CacheScope == nil || *got.CacheScope != cfg.scope {
							t.Errorf("%s cacheScope = %v, want %q", call.method, got.CacheScope, cfg.scope)
						}
					}
					info, has := got.Meta[metaServerKey]
					switch {
					case c.Modern && !has:
						t.Errorf("%s: modern result has no _meta %s", call.method, metaServerKey)
					case c.Modern && string(info) != wantInfo:
						t.Errorf("%s: _meta serverInfo = %s, want %s", call.method, info, wantInfo)
					case !c.Modern && has:
						t.Errorf("%s: legacy result carries _meta %s", call.method, metaServerKey)
					}
				}
			})
		}
	}
}

// TestModernNonASCIIName: a 2026-07-28 client reading a skill file whose
// path has non-ASCII letters sends Mcp-Name in the spec's base64 form
// (=?base64?…?=); the sidecar decodes it before comparing (it answered
// -32020 before package wire decoded it), and still refuses a name that
// decodes to another file, or a sentinel that is not base64 of UTF-8.
func TestModernNonASCIIName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := pluginPDF()
	files["skills/pdf-processing/reference/données-é.md"] = "# Données\n"
	sidecartest.WriteTree(t, dir, files)
	w := newWatcher(t, dir)
	up := testupstream.Start(t, testupstream.Config{Stateless: true, Tools: []*mcp.Tool{alphaTool()}})
	c := &sidecartest.Caller{T: t, Endpoint: newSidecar(t, up.URL, w.Snapshot, nil), Modern: true}
	uri := "skill://pdf-processing/reference/données-é.md"
	read := map[string]any{"uri": uri}
	if got := c.Call("resources/read", read); got.Status != http.StatusOK || !strings.Contains(string(got.Body), "# Données") {
		t.Errorf("resources/read of %s with Mcp-Name %s = %d %s, want the file", uri, wire.EncodeHeaderValue(uri), got.Status, got.Body)
	}
	for name, header := range map[string]string{
		"another file, encoded": wire.EncodeHeaderValue("skill://pdf-processing/reference/données-è.md"),
		"not base64 of UTF-8":   "=?base64?/w==?=",
	} {
		c.CallWith("resources/read", read, setHeaderEdit("Mcp-Name", header)).
			Failed(t, "resources/read Mcp-Name "+name, http.StatusBadRequest, -32020)
	}
}

func setHeaderEdit(k, v string) func(http.Header, map[string]any) {
	return func(h http.Header, _ map[string]any) { h.Set(k, v) }
}

// TestLegacyVersionHeader: on the legacy wire a server must answer a
// request whose MCP-Protocol-Version header names a version it does not
// support with 400 Bad Request (streamable HTTP transport, protocol
// version header, 2025-06-18 on). For every version, each method the
// sidecar answers gets the status the go-sdk server behind it gives ping
// with the same header; a refusal is the legacy numbering of the modern
// unsupported-version error, with the caller's id.
func TestLegacyVersionHeader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginWithAgent())
	w := newWatcher(t, dir)
	up := testupstream.Start(t, testupstream.Config{Stateless: true, Tools: []*mcp.Tool{alphaTool()}})
	side := newSidecar(t, up.URL, w.Snapshot, nil)
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01", "2025-11-24"} {
		status, _, body := sidecartest.Call(t, up.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"MCP-Protocol-Version": version})
		if version == "1999-01-01" && status != http.StatusBadRequest {
			t.Fatalf("go-sdk answered ping with MCP-Protocol-Version %s: HTTP %d %s; want 400 (the peer no longer checks the header)", version, status, body)
		}
		for _, call := range localCalls() {
			t.Run(version+"/"+call.method, func(t *testing.T) {
				t.Parallel()
				c := &sidecartest.Caller{T: t, Endpoint: side}
				r := c.CallWith(call.method, call.params, func(h http.Header, _ map[string]any) { h.Set("MCP-Protocol-Version", version) })
				if status == http.StatusOK {
					r.OK(t, call.method, nil)
					return
				}
				e := r.Failed(t, call.method+" with MCP-Protocol-Version "+version, status, -32004)
				var got struct {
					ID   json.RawMessage `json:"id"`
					Data struct {
						Requested string `json:"requested"`
					} `json:"data"`
				}
				_ = json.Unmarshal(r.Body, &got)
				if e != nil {
					_ = json.Unmarshal(e.Data, &got.Data)
				}
				if string(got.ID) != "7" || got.Data.Requested != version {
					t.Errorf("%s refusal = %s; want id 7 and data.requested %q", call.method, r.Body, version)
				}
			})
		}
	}
}
