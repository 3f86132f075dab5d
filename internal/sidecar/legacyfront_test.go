package sidecar_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// legacyHeaders are the headers of a legacy request in session sid.
func legacyHeaders(sid string, kv ...string) map[string]string {
	h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// TestLegacyClientModernOnlyUpstream is the legacy front end to end: a go-sdk client
// in the legacy era, through the sidecar (era-bridge auto), in front of an
// upstream that speaks only 2026-07-28 and refuses initialize
// (internal/modernonly).
func TestLegacyClientModernOnlyUpstream(t *testing.T) {
	t.Parallel()
	up := sidecartest.Upstream(t, modernonly.Handler(modernonly.NewServer()))
	// The peer refuses the legacy handshake itself: without the bridge a
	// legacy client cannot talk to it.
	if code, _, body := sidecartest.Call(t, up.URL+"/mcp", sidecartest.Initialize, nil); code != http.StatusBadRequest || !strings.Contains(body, "-32020") || !strings.Contains(body, modernonly.Version) {
		t.Fatalf("peer's own answer to initialize: %d %s; want 400, -32020 naming %s", code, body, modernonly.Version)
	}
	u, _ := startEraSidecar(t, up, "modern", "auto")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("legacy connect through the sidecar: %v", err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	if init.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25", init.ProtocolVersion)
	}
	if init.ServerInfo == nil || init.ServerInfo.Name != "modern-only-peer" || init.Instructions != "A modern-only test peer." {
		t.Errorf("serverInfo %+v, instructions %q: not the upstream's", init.ServerInfo, init.Instructions)
	}
	if _, ok := init.Capabilities.Extensions["io.modelcontextprotocol/skills"]; !ok || init.Capabilities.Tools == nil {
		t.Errorf("capabilities %+v: want the upstream's tools and the sidecar's skills declaration", init.Capabilities)
	}
	sid := cs.ID()
	if len(sid) < 40 {
		t.Errorf("session id %q: want a minted, unguessable id (256 bits)", sid)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 2 {
		t.Fatalf("tools/list: %+v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call add: %+v, %v", res, err)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"sum":5`) {
		t.Errorf("add(2,3) = %s, want sum 5", b)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://readme"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != modernonly.ReadmeText {
		t.Fatalf("resources/read demo://readme: %+v, %v", read, err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}

	// A missing resource: the modern -32602 is the legacy -32002.
	_, _, body := sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"demo://nope"}}`, legacyHeaders(sid))
	if !strings.Contains(body, `"code":-32002`) {
		t.Errorf("resources/read of a missing resource: %s, want -32002", body)
	}
	// The sidecar's own methods, on the legacy wire, in the session.
	_, _, body = sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":10,"method":"skills/list"}`, legacyHeaders(sid))
	if !strings.Contains(body, `"skills":[`) || !strings.Contains(body, "incident-summary") {
		t.Errorf("skills/list through the front: %s", body)
	}
	_, _, body = sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":11,"method":"agents/list"}`, legacyHeaders(sid))
	if !strings.Contains(body, "billing-triage") {
		t.Errorf("agents/list through the front: %s", body)
	}

	// Another caller's credentials with this session id: unknown.
	code, _, body := sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":12,"method":"tools/list"}`, legacyHeaders(sid, "Authorization", "Bearer someone-else"))
	if code != http.StatusNotFound || strings.Contains(body, `"tools"`) {
		t.Errorf("stolen session id with other credentials: %d %s; want 404 and no tools", code, body)
	}
	code, _, _ = sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":13,"method":"tools/list"}`, legacyHeaders("made-up-id"))
	if code != http.StatusNotFound {
		t.Errorf("a session id never minted: %d, want 404", code)
	}

	// A modern client in front of the same upstream passes through.
	_, _, body = sidecartest.Call(t, u, modernDiscover, modernHeaders("server/discover"))
	if !strings.Contains(body, `"supportedVersions":["2026-07-28"]`) || !strings.Contains(body, "io.modelcontextprotocol/skills") {
		t.Errorf("modern server/discover: %s", body)
	}

	// DELETE ends the session.
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
	if code, _, _ := sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":14,"method":"tools/list"}`, legacyHeaders(sid)); code != http.StatusNotFound {
		t.Errorf("tools/list after DELETE: %d, want 404", code)
	}
}

// TestLegacyClientLeavingCancelsTheModernCall: on the sidecar's own server
// a sealed session's call follows its client's request (h1's request
// context, passed on by package caller to the call's own, package
// slotctx's): the legacy client's going away in the middle of a call
// closes the upstream's stream, the modern wire's cancellation. The judge
// is the upstream's own HTTP request ending; go-sdk's stateless server
// does not cancel a tool when its client disconnects.
func TestLegacyClientLeavingCancelsTheModernCall(t *testing.T) {
	t.Parallel()
	srv := modernonly.NewServer()
	release := make(chan struct{})
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return &mcp.CallToolResult{}, nil
	})
	started, ended := make(chan struct{}, 1), make(chan struct{})
	h := modernonly.Handler(srv)
	up := sidecartest.Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" && r.Header.Get("Mcp-Name") == "slow" {
			select {
			case started <- struct{}{}:
			default:
				t.Errorf("a second tools/call of slow reached the upstream (%s)", r.Header.Get("User-Agent"))
			}
			go func() {
				select {
				case <-r.Context().Done():
					close(ended)
				case <-release:
				}
			}()
		}
		h.ServeHTTP(w, r)
	}))
	// After the upstream's own: cleanups run last first, and the upstream
	// waits for the tool, which runs on until released.
	t.Cleanup(func() { close(release) })
	u, _ := startEraSidecar(t, up, "modern", "auto")
	code, hdr, body := sidecartest.Call(t, u, sidecartest.Initialize, nil)
	if code != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	sid := hdr.Get("Mcp-Session-Id")
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range legacyHeaders(sid) {
		req.Header.Set(k, v)
	}
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the call never reached the upstream")
	}
	select {
	case <-ended:
		t.Fatal("the upstream's request ended while the client waited")
	case <-time.After(100 * time.Millisecond):
	}
	leave()
	select {
	case <-ended:
	case <-time.After(10 * time.Second): // the server notices a client gone within about a second
		t.Error("the upstream's request for the call is still open 10 s after the legacy client left")
	}
}
