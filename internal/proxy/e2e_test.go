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
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// upstreamMode is one way a go-sdk server can be run behind the sidecar.
// What a mode can carry besides plain requests depends on its era (go-sdk
// v1.8.0, streamable.go and mrtr.go):
//
//   - Stateful modes speak the legacy era: the server sends requests of its
//     own (sampling, elicitation) and notifications on the POST's SSE reply
//     or, with JSON replies, on the standalone GET stream.
//   - Stateless modes speak 2026-07-28 (SEP-2575): there is no session to
//     answer a server's request on, so the server asks for input with an
//     input_required result that the client fulfils and retries (SEP-2322,
//     multi round trip); list_changed arrives on a subscriptions/listen
//     stream (a POST whose SSE reply stays open, SSE even in JSON mode).
//   - A stateless server with JSON replies has nowhere to put a notification
//     sent during tools/call: it is not a response, so it would go to the
//     standalone GET stream, which a stateless server does not have.
type upstreamMode struct {
	name string
	opts mcp.StreamableHTTPOptions
	// stateful modes have sessions: the server can send requests of its
	// own (the ask tool) and the legacy handshake is used.
	stateful bool
	// progress reports whether a notification sent during tools/call can
	// reach the client at all (false only for stateless JSON replies).
	progress bool
}

func upstreamModes() []upstreamMode {
	return []upstreamMode{
		{name: "stateful-sse", stateful: true, progress: true},
		{name: "stateful-eventstore", opts: mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}, stateful: true, progress: true},
		{name: "stateful-json", opts: mcp.StreamableHTTPOptions{JSONResponse: true}, stateful: true, progress: true},
		{name: "stateless-2026", opts: mcp.StreamableHTTPOptions{Stateless: true}, progress: true},
		{name: "stateless-json", opts: mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
	}
}

var pngBytes = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0, 0xff, 0xfe}

// newUpstream starts a go-sdk server with tools echo, ask (a sampling
// request the server sends on its own, which needs a session), confirm (an
// elicitation asked the multi-round-trip way, which go-sdk carries in every
// era), count (a progress notification; its result says whether the server
// could send it) and touch (adds a resource, so the server sends
// notifications/resources/list_changed), and a text and a blob resource.
func newUpstream(t *testing.T, mode upstreamMode) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(upstreamHandler(mode))
	t.Cleanup(srv.Close)
	return srv
}

// upstreamHandler is newUpstream's MCP handler, for tests that put
// something in front of it.
func upstreamHandler(mode upstreamMode) http.Handler {
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
	mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		// Asked as input_required: in the legacy era go-sdk's server turns
		// it into an elicitation/create request to the client; in
		// 2026-07-28 the client fulfils it and calls again.
		r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{RequestState: "step=1", InputRequests: mcp.InputRequestMap{
				"who": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
					"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
			}}, nil, nil
		}
		name, _ := r.Content["name"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + name + " " + req.Params.RequestState}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "count"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		text := "progress sent"
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 1, Message: "one"}); err != nil {
			text = "progress not sent" // the error's text differs per session; the fact does not
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
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
	// Every request the server handles ends within clientBound, so that a
	// sidecar holding back a request to the client fails the test instead
	// of leaving a handler (and the server's Close) waiting forever.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithTimeout(ctx, clientBound)
			defer cancel()
			return next(ctx, method, req)
		}
	})
	opts := mode.opts
	return testupstream.Handler(s, &opts)
}

// newSidecar starts the proxy alone (proxy.New, its own constructor) in
// front of upstream, mounted at /mcp. Not the assembled sidecar: these tests
// judge the relay, and count what reaches the upstream, which the
// assembly's era probes (package bridge) would add to.
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

// clientBound bounds every HTTP request of a test client and every request
// a test upstream handles, far above what a passing test takes.
const clientBound = 15 * time.Second

type clientEvents struct {
	listChanged chan struct{}
	progress    chan *mcp.ProgressNotificationParams
	elicited    chan string // each elicitation's message
}

func connect(t *testing.T, ctx context.Context, endpoint string) (*mcp.ClientSession, *clientEvents) {
	t.Helper()
	ev := &clientEvents{
		listChanged: make(chan struct{}, 8),
		progress:    make(chan *mcp.ProgressNotificationParams, 8),
		elicited:    make(chan string, 8),
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case ev.elicited <- r.Params.Message:
			default:
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			select {
			case ev.listChanged <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case ev.progress <- r.Params:
			default:
			}
		},
	})
	// Every request, streams included, is cut after clientBound: a sidecar
	// that held events back would otherwise leave go-sdk's Connect waiting
	// forever for the subscriptions/listen acknowledgement (its stream runs
	// on a context of its own, not ctx).
	hc := &http.Client{Timeout: clientBound}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("Connect(%s) = %v", endpoint, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, ev
}

// TestThroughSidecarEveryUpstreamMode runs a go-sdk client through the
// sidecar and one straight to the upstream, in every upstream mode, and
// wants equal results; in each mode a server-to-client request and the
// notifications travel in the form that mode's era has (see upstreamMode),
// and what a mode cannot carry is asserted, not skipped.
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

			// callBothParams calls the tool through the sidecar and directly
			// and wants equal results; it returns the sidecar's.
			callBothParams := func(p *mcp.CallToolParams) *mcp.CallToolResult {
				t.Helper()
				got, err := via.CallTool(ctx, p)
				if err != nil {
					t.Fatalf("CallTool(%s) via sidecar = %v", p.Name, err)
				}
				want, err := direct.CallTool(ctx, p)
				if err != nil {
					t.Fatalf("CallTool(%s) direct = %v", p.Name, err)
				}
				if diff := cmp.Diff(jsonOf(t, want), jsonOf(t, got)); diff != "" {
					t.Errorf("CallTool(%s) via sidecar differs from direct (-direct +sidecar):\n%s", p.Name, diff)
				}
				return got
			}
			callBoth := func(name string, args any) *mcp.CallToolResult {
				t.Helper()
				return callBothParams(&mcp.CallToolParams{Name: name, Arguments: args})
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
			// A server-to-client request. Sampling pushed by the server
			// needs a session: stateless servers refuse to send it, and the
			// refusal reaches the client as the direct one does.
			if got := callBoth("ask", map[string]any{}); got.IsError == mode.stateful {
				t.Errorf("CallTool(ask) via sidecar: IsError = %v, want %v (sampling needs a stateful upstream): %v", got.IsError, !mode.stateful, jsonOf(t, got))
			}
			// Elicitation asked the multi-round-trip way works in every era:
			// a request on the reply stream (legacy) or an input_required
			// result fulfilled by the client (2026-07-28).
			if got := callBoth("confirm", map[string]any{}); textOf(got) != "hello ada step=1" {
				t.Errorf("CallTool(confirm) via sidecar = %v, want the elicited name back", jsonOf(t, got))
			}
			select {
			case msg := <-events.elicited:
				if msg != "name?" {
					t.Errorf("elicitation message via sidecar = %q, want name?", msg)
				}
			default:
				t.Errorf("CallTool(confirm) via sidecar returned without the client being asked")
			}

			// A notification sent during tools/call.
			p := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{}}
			p.SetProgressToken("tok-1")
			got := callBothParams(p)
			if !mode.progress {
				// Documented, not skipped: the upstream could not send it,
				// directly or through the sidecar, and nothing arrived.
				if textOf(got) != "progress not sent" {
					t.Errorf("CallTool(count) = %q, want the upstream unable to send progress in this mode", textOf(got))
				}
				select {
				case n := <-events.progress:
					t.Errorf("progress %+v reached the client in a mode that cannot send it", n)
				default:
				}
			} else {
				if textOf(got) != "progress sent" {
					t.Errorf("CallTool(count) = %q, want progress sent", textOf(got))
				}
				select {
				case n := <-events.progress:
					if n.ProgressToken != "tok-1" || n.Message != "one" {
						t.Errorf("progress via sidecar = %+v, want token tok-1, message one", n)
					}
				case <-ctx.Done():
					t.Fatalf("notifications/progress never reached the client through the sidecar")
				}
			}

			// notifications/resources/list_changed: on the GET stream
			// (legacy) or the subscriptions/listen stream (2026-07-28).
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

func textOf(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) != 1 {
		return ""
	}
	tc, _ := r.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
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
