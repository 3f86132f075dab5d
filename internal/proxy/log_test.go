package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skills-sidecar/skills-sidecar/internal/deadaddr"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// observedSidecar starts the proxy in front of upstream with a logger that
// keeps every entry, debug included.
func observedSidecar(t *testing.T, upstream string) (string, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", logs
}

// requestLine waits (at most 5s) for the request's own line, which the
// proxy writes as the handler ends, possibly after the client has its
// reply; then it returns every entry logged, that line among them.
func requestLine(t *testing.T, logs *observer.ObservedLogs) []observer.LoggedEntry {
	t.Helper()
	isLine := func(e observer.LoggedEntry) bool {
		return e.Message == "request" || e.Message == "request refused" || e.Message == "request failed"
	}
	testwait.For(t, time.Minute, func() bool { return logs.Filter(isLine).Len() > 0 }, "a request line")
	return logs.All()
}

// TestRequestLogLine: each request ends in exactly one log line, at the
// level docs/operations.md names (debug for a request that went well,
// info for the sidecar's own refusal, warn for a failure), carrying method,
// era, route, outcome, status, the upstream's own status and duration, and
// for a failure the error, and nothing else.
func TestRequestLogLine(t *testing.T) {
	t.Parallel()
	stateless := &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	sdk := testupstream.Serve(t, s, stateless)
	stateful := newUpstream(t, upstreamModes()[0])

	dead := "http://" + deadaddr.Hold(t) + "/mcp"
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: partial")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	t.Cleanup(cut.Close)

	const (
		legacyList = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		modernList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	)
	tests := []struct {
		name     string
		upstream string
		body     string
		hdr      map[string]string
		level    zapcore.Level
		msg      string
		fields   map[string]any // without duration, which is checked apart
		wantErr  string         // a part of the error field; "" for none
	}{
		{name: "legacy forwarded", upstream: sdk.URL, body: legacyList, hdr: map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
			level: zapcore.DebugLevel, msg: "request",
			fields: map[string]any{"method": "tools/list", "era": "legacy", "route": "upstream", "outcome": "2xx", "status": int64(200), "upstream_status": int64(200)}},
		{name: "modern", upstream: sdk.URL, body: modernList, hdr: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
			level: zapcore.DebugLevel, msg: "request",
			fields: map[string]any{"method": "tools/list", "era": "modern", "route": "upstream", "outcome": "2xx", "status": int64(200), "upstream_status": int64(200)}},
		// go-sdk wants the header with the _meta: the era is the body's,
		// the 400 the upstream's own, passed on at debug.
		{name: "modern by _meta alone", upstream: sdk.URL, body: modernList,
			level: zapcore.DebugLevel, msg: "request",
			fields: map[string]any{"method": "tools/list", "era": "modern", "route": "upstream", "outcome": "4xx", "status": int64(400), "upstream_status": int64(400)}},
		{name: "modern by header alone", upstream: sdk.URL, body: legacyList, hdr: map[string]string{"Mcp-Protocol-Version": "2026-07-28"},
			level: zapcore.DebugLevel, msg: "request",
			fields: map[string]any{"method": "tools/list", "era": "modern", "route": "upstream", "outcome": "4xx", "status": int64(400), "upstream_status": int64(400)}},
		{name: "upstream's own 404", upstream: stateful.URL, body: legacyList, hdr: map[string]string{"Mcp-Session-Id": "gone", "Mcp-Protocol-Version": "2025-11-25"},
			level: zapcore.DebugLevel, msg: "request",
			fields: map[string]any{"method": "tools/list", "era": "legacy", "route": "upstream", "outcome": "4xx", "status": int64(404), "upstream_status": int64(404)}},
		{name: "upstream unreachable", upstream: dead, body: legacyList,
			level: zapcore.WarnLevel, msg: "request failed", wantErr: "refused",
			fields: map[string]any{"method": "tools/list", "era": "legacy", "route": "upstream", "outcome": "5xx", "status": int64(502), "upstream_status": int64(0)}},
		{name: "reply cut short", upstream: cut.URL, body: legacyList,
			level: zapcore.WarnLevel, msg: "request failed", wantErr: "upstream reply cut short",
			fields: map[string]any{"method": "tools/list", "era": "legacy", "route": "upstream", "outcome": "2xx", "status": int64(200), "upstream_status": int64(200)}},
		{name: "too large", upstream: sdk.URL, body: `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", proxy.DefaultMaxBodyBytes) + `"}}`,
			level: zapcore.InfoLevel, msg: "request refused",
			fields: map[string]any{"method": "invalid", "era": "unknown", "route": "local", "outcome": "4xx", "status": int64(413)}},
		{name: "foreign origin", upstream: sdk.URL, body: legacyList, hdr: map[string]string{"Origin": "https://evil.example", "Mcp-Protocol-Version": "2025-11-25"},
			level: zapcore.InfoLevel, msg: "request refused",
			fields: map[string]any{"method": "other", "era": "legacy", "route": "local", "outcome": "4xx", "status": int64(403)}},
		{name: "not JSON", upstream: sdk.URL, body: `{"jsonrpc":`,
			level: zapcore.DebugLevel, msg: "request",
			fields: map[string]any{"method": "invalid", "era": "unknown", "route": "local", "outcome": "4xx", "status": int64(400)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, logs := observedSidecar(t, tt.upstream)
			req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			entries := requestLine(t, logs)
			if len(entries) != 1 {
				t.Fatalf("logged %d lines, want exactly 1: %v", len(entries), entries)
			}
			e := entries[0]
			if e.Level != tt.level || e.Message != tt.msg {
				t.Errorf("line = %v %q, want %v %q", e.Level, e.Message, tt.level, tt.msg)
			}
			got := e.ContextMap()
			if d, ok := got["duration"].(time.Duration); !ok || d <= 0 {
				t.Errorf("duration = %v, want a positive time.Duration", got["duration"])
			}
			delete(got, "duration")
			errText, _ := got["error"].(string)
			delete(got, "error")
			if tt.wantErr == "" && errText != "" || !strings.Contains(errText, tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", errText, tt.wantErr)
			}
			if diff := cmp.Diff(tt.fields, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDetachedStreamLogLine: a standalone GET stream, relayed off its
// handler, ends in one line too: a failure at warn with the error when the
// upstream cuts it, a plain debug line when the client leaves.
func TestDetachedStreamLogLine(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	upstream := func(cut bool) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
			w.(http.Flusher).Flush()
			if cut {
				panic(http.ErrAbortHandler)
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, tt := range []struct {
		name    string
		cut     bool
		level   zapcore.Level
		msg     string
		wantErr string
	}{
		{"upstream cuts the stream", true, zapcore.WarnLevel, "request failed", "upstream stream cut short"},
		{"client leaves", false, zapcore.DebugLevel, "request", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, logs := observedSidecar(t, upstream(tt.cut))
			req, _ := http.NewRequest(http.MethodGet, u, nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", "s1")
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			first := make([]byte, 16)
			if _, err := io.ReadFull(resp.Body, first); err != nil {
				t.Fatalf("the stream's first event: %v", err)
			}
			if tt.cut {
				_, _ = io.Copy(io.Discard, resp.Body)
			}
			resp.Body.Close()
			tr.CloseIdleConnections()
			entries := requestLine(t, logs)
			if len(entries) != 1 {
				t.Fatalf("logged %d lines, want exactly 1: %v", len(entries), entries)
			}
			e := entries[0]
			errText, _ := e.ContextMap()["error"].(string)
			if e.Level != tt.level || e.Message != tt.msg || !strings.Contains(errText, tt.wantErr) || (tt.wantErr == "") != (errText == "") {
				t.Errorf("line = %v %q error %q, want %v %q error containing %q", e.Level, e.Message, errText, tt.level, tt.msg, tt.wantErr)
			}
		})
	}
}
