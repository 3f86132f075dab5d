package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// upstreamMode is one way a go-sdk server can be run behind the sidecar.
type upstreamMode struct {
	name string
	opts mcp.StreamableHTTPOptions
	// stateful modes support server-to-client requests and the GET stream.
	stateful bool
}

func upstreamModes() []upstreamMode {
	return []upstreamMode{
		{name: "stateful-sse", stateful: true},
		{name: "stateful-eventstore", opts: mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}, stateful: true},
		{name: "stateful-json", opts: mcp.StreamableHTTPOptions{JSONResponse: true}, stateful: true},
		{name: "stateless-2026", opts: mcp.StreamableHTTPOptions{Stateless: true}},
		{name: "stateless-json", opts: mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
	}
}

var pngBytes = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0, 0xff, 0xfe}

// newUpstream starts a go-sdk server with tools echo, ask (a sampling
// request back to the client) and touch (adds a resource, so the server
// sends notifications/resources/list_changed), and a text and a blob
// resource.
func newUpstream(t *testing.T, mode upstreamMode) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "touch"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		s.AddResource(&mcp.Resource{URI: "test://new", Name: "new"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "new"}}}, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://text", Name: "text", MIMEType: "text/plain"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "héllo\r\nworld"}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://blob", Name: "blob", MIMEType: "image/png"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "image/png", Blob: pngBytes}}}, nil
	})
	opts := mode.opts
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &opts))
	t.Cleanup(srv.Close)
	return srv
}

// newSidecar starts the proxy in front of upstream, mounted at /mcp.
func newSidecar(t *testing.T, upstream string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type clientEvents struct {
	listChanged chan struct{}
}

func connect(t *testing.T, ctx context.Context, endpoint string) (*mcp.ClientSession, *clientEvents) {
	t.Helper()
	ev := &clientEvents{listChanged: make(chan struct{}, 8)}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			select {
			case ev.listChanged <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1}, nil)
	if err != nil {
		t.Fatalf("Connect(%s) = %v", endpoint, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, ev
}

func TestThroughSidecarEveryUpstreamMode(t *testing.T) {
	t.Parallel()
	for _, mode := range upstreamModes() {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			up := newUpstream(t, mode)
			side := newSidecar(t, up.URL)

			via, events := connect(t, ctx, side.URL+"/mcp")
			direct, _ := connect(t, ctx, up.URL)

			caps := via.InitializeResult().Capabilities
			for _, id := range []string{rewrite.SkillsExtensionID, rewrite.AgentsExtensionID} {
				if _, ok := caps.Extensions[id]; !ok {
					t.Errorf("capabilities.extensions through the sidecar lack %s: %v", id, caps.Extensions)
				}
			}
			if caps.Resources == nil {
				t.Errorf("capabilities.resources missing through the sidecar")
			}
			if got := direct.InitializeResult().Capabilities.Extensions; len(got) != 0 {
				t.Errorf("direct capabilities.extensions = %v, want none (the upstream declares nothing)", got)
			}
			wantV := "2025-11-25" // go-sdk stateful servers speak the legacy era
			if !mode.stateful {
				wantV = "2026-07-28" // reached through server/discover
			}
			if gotV := via.InitializeResult().ProtocolVersion; gotV != wantV {
				t.Errorf("negotiated version via sidecar = %q, want %q", gotV, wantV)
			}

			callBoth := func(name string, args any) {
				t.Helper()
				p := &mcp.CallToolParams{Name: name, Arguments: args}
				got, err := via.CallTool(ctx, p)
				if err != nil {
					t.Fatalf("CallTool(%s) via sidecar = %v", name, err)
				}
				want, err := direct.CallTool(ctx, p)
				if err != nil {
					t.Fatalf("CallTool(%s) direct = %v", name, err)
				}
				if diff := cmp.Diff(jsonOf(t, want), jsonOf(t, got)); diff != "" {
					t.Errorf("CallTool(%s) via sidecar differs from direct (-direct +sidecar):\n%s", name, diff)
				}
			}
			callBoth("echo", map[string]any{"text": "ünïcode & <html>"})
			for _, uri := range []string{"test://text", "test://blob"} {
				got, err := via.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("ReadResource(%s) via sidecar = %v", uri, err)
				}
				want, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("ReadResource(%s) direct = %v", uri, err)
				}
				if diff := cmp.Diff(jsonOf(t, want), jsonOf(t, got)); diff != "" {
					t.Errorf("ReadResource(%s) via sidecar differs (-direct +sidecar):\n%s", uri, diff)
				}
			}
			if !mode.stateful {
				return
			}
			callBoth("ask", map[string]any{}) // a sampling request travels server -> client -> server
			if _, err := via.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{}}); err != nil {
				t.Fatalf("CallTool(touch) = %v", err)
			}
			select {
			case <-events.listChanged:
			case <-ctx.Done():
				t.Fatalf("notifications/resources/list_changed never reached the client through the sidecar")
			}
		})
	}
}

func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplayAfterDroppedStream: with an event-store upstream, a client whose
// streams are all cut reconnects through the sidecar (go-sdk resumes its GET
// stream with Last-Event-ID, which the sidecar parses for a replayed
// handshake) and still receives the server's notifications; the session
// stays usable. TestGETReplayOfInitializeIsRewritten pins the replay bytes.
func TestReplayAfterDroppedStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := newUpstream(t, upstreamMode{name: "eventstore", opts: mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}, stateful: true})
	side := newSidecar(t, up.URL)
	cs, events := connect(t, ctx, side.URL+"/mcp")
	// Cut every client connection to the sidecar, the GET stream included;
	// the go-sdk client reconnects it with Last-Event-ID.
	side.CloseClientConnections()
	// A POST racing the close may meet the dead keep-alive connection;
	// that request is the client's to retry, as any client would.
	var err error
	for range 5 {
		if _, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{}}); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("CallTool(touch) after the drop = %v", err)
	}
	select {
	case <-events.listChanged:
	case <-ctx.Done():
		t.Fatal("the list_changed notification never reached the client after its stream was dropped")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}}); err != nil {
		t.Errorf("session unusable after the replay: %v", err)
	}
}
