package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// mrtrUpstream is a legacy-only go-sdk server whose tools ask the client:
// "sample" for a sampling/createMessage, "ask" for an elicitation/create
// then a roots/list. Each tool reports the error its request got, if any.
func mrtrUpstream(t *testing.T, errs chan<- error) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	fail := func(err error) (*mcp.CallToolResult, error) {
		select {
		case errs <- err:
		default:
		}
		return nil, err
	}
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "capital of France & <more>?"}}}})
		if err != nil {
			return fail(err)
		}
		return text("sampled: " + res.Content.(*mcp.TextContent).Text), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "login?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return fail(err)
		}
		roots, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return fail(err)
		}
		return text(fmt.Sprintf("%s %v %d roots %s", el.Action, el.Content["name"], len(roots.Roots), roots.Roots[0].URI)), nil
	})
	return testupstream.Serve(t, s, nil)
}

func mrtrBridge(t *testing.T, srv *httptest.Server, timeout time.Duration) *Transport {
	t.Helper()
	bt := &Transport{Next: srv.Client().Transport, Credentials: []string{"Authorization"}, PendingTimeout: timeout,
		Eras: func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} }}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bt.Start(ctx)
	return bt
}

// rpcReply is the one JSON-RPC response of a reply, written from the
// 2026-07-28 schema (InputRequiredResult, JSONRPCErrorResponse).
type rpcReply struct {
	status int
	ID     json.RawMessage `json:"id"`
	Result struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
		Content      []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
}

// modernCall posts a 2026-07-28 tools/call as the spec's client would:
// _meta with protocolVersion and clientCapabilities, the routing headers,
// and extra params (inputResponses, requestState) on a retry.
func modernCall(t *testing.T, bt *Transport, u, auth, id, tool, caps, extra string) rpcReply {
	t.Helper()
	resp, err := roundTrip(bt, modernCallRequest(u, auth, id, tool, caps, extra))
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return readRPC(t, resp, tool, id)
}

// modernCallRequest is the request modernCall sends.
func modernCallRequest(u, auth, id, tool, caps, extra string) *http.Request {
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"` + tool + `","arguments":{}` + extra + `,` + fmt.Sprintf(testMeta, caps) + `}}`
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}

// readRPC reads the one JSON-RPC response of resp to the call of tool
// whose id is id, JSON or SSE.
func readRPC(t *testing.T, resp *http.Response, tool, id string) rpcReply {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	data := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = nil
		r := rewrite.NewReader(strings.NewReader(string(raw)), 0)
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if m, perr := rewrite.ParseMessage(ev.Data); perr == nil && (m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError) {
				data = ev.Data
			}
		}
	}
	var out rpcReply
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("tools/call %s: reply %q: %v", tool, raw, err)
	}
	if string(out.ID) != `"`+id+`"` {
		t.Errorf("tools/call %s: reply id %s, want %q", tool, out.ID, id)
	}
	out.status = resp.StatusCode
	return out
}

// oneRequest returns the key of the single input request of r and checks
// its method.
func oneRequest(t *testing.T, r rpcReply, method string) string {
	t.Helper()
	if r.Error != nil || r.Result.ResultType != "input_required" || len(r.Result.InputRequests) != 1 || r.Result.RequestState == "" {
		t.Fatalf("reply %+v, want an input_required result with one input request and a requestState", r)
	}
	for k, v := range r.Result.InputRequests {
		if v.Method != method {
			t.Fatalf("input request %s is %s, want %s", k, v.Method, method)
		}
		return k
	}
	return ""
}

func retry(key, state, response string) string {
	return `,"inputResponses":{"` + key + `":` + response + `},"requestState":"` + state + `"`
}

const sampled = `{"role":"assistant","content":{"type":"text","text":"Paris & co"},"model":"m","stopReason":"endTurn"}`

// A server's sampling, elicitation and roots requests inside a tools/call
// reach a 2026-07-28 client as input_required results, and its retries'
// inputResponses reach the server: the tool completes with them, and the
// reply carries the retry's id.
func TestMRTRRoundTrips(t *testing.T) {
	srv := mrtrUpstream(t, make(chan error, 1))
	bt := mrtrBridge(t, srv, 0)
	caps := `{"sampling":{},"elicitation":{},"roots":{}}`

	r := modernCall(t, bt, srv.URL, "", "s1", "sample", caps, "")
	key := oneRequest(t, r, "sampling/createMessage")
	if p := string(r.Result.InputRequests[key].Params); !strings.Contains(p, `"maxTokens":10`) || !strings.Contains(p, `capital of France`) {
		t.Errorf("sampling params %s, want the server's", p)
	}
	r = modernCall(t, bt, srv.URL, "", "s2", "sample", caps, retry(key, r.Result.RequestState, sampled))
	if r.Error != nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "sampled: Paris & co" || r.Result.ResultType != "complete" {
		t.Fatalf("retry with the sampling result: %+v", r)
	}

	r = modernCall(t, bt, srv.URL, "", "a1", "ask", caps, "")
	key = oneRequest(t, r, "elicitation/create")
	r = modernCall(t, bt, srv.URL, "", "a2", "ask", caps, retry(key, r.Result.RequestState, `{"action":"accept","content":{"name":"octocat"}}`))
	key = oneRequest(t, r, "roots/list") // a second round on the same call
	r = modernCall(t, bt, srv.URL, "", "a3", "ask", caps, retry(key, r.Result.RequestState, `{"roots":[{"uri":"file:///src","name":"src"}]}`))
	if r.Error != nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "accept octocat 1 roots file:///src" {
		t.Fatalf("retry with the roots: %+v", r)
	}
	if n := bt.pending.len(); n != 0 {
		t.Errorf("%d calls still pending after they completed", n)
	}
}

// A request for a capability the client did not declare is -32021 with
// requiredCapabilities, and the server's request is refused upstream.
func TestMRTRMissingCapability(t *testing.T) {
	errs := make(chan error, 1)
	srv := mrtrUpstream(t, errs)
	bt := mrtrBridge(t, srv, 0)
	r := modernCall(t, bt, srv.URL, "", "m1", "sample", `{"elicitation":{}}`, "")
	if r.Error == nil || r.Error.Code != -32021 || !strings.Contains(string(r.Error.Data), `"requiredCapabilities":{"sampling":{}}`) {
		t.Fatalf("sampling without the capability: %+v, want -32021 requiring sampling", r)
	}
	select {
	case err := <-errs:
		t.Logf("the server's request got: %v", err)
	case <-time.After(10 * time.Second):
		t.Error("the server's sampling request was never answered")
	}
	if n := bt.pending.len(); n != 0 {
		t.Errorf("%d calls pending, want none", n)
	}
}

// Attacks on the retry: another caller's credentials, another tool, an
// unknown state, responses missing or of the wrong type. None answers or
// releases the pending call; the rightful retry still completes it.
func TestMRTRRetryAttacks(t *testing.T) {
	srv := mrtrUpstream(t, make(chan error, 1))
	bt := mrtrBridge(t, srv, 0)
	caps := `{"sampling":{}}`
	r := modernCall(t, bt, srv.URL, "Bearer alice", "1", "sample", caps, "")
	key, state := oneRequest(t, r, "sampling/createMessage"), r.Result.RequestState

	for name, c := range map[string]struct{ auth, tool, caps, extra string }{
		"other caller":       {"Bearer mallory", "sample", caps, retry(key, state, sampled)},
		"no credentials":     {"", "sample", caps, retry(key, state, sampled)},
		"other capabilities": {"Bearer alice", "sample", `{"sampling":{},"roots":{}}`, retry(key, state, sampled)},
		"other tool":         {"Bearer alice", "ask", caps, retry(key, state, sampled)},
		"unknown state":      {"Bearer alice", "sample", caps, retry(key, state+"0", sampled)},
		"responses a string": {"Bearer alice", "sample", caps, `,"inputResponses":"x","requestState":"` + state + `"`},
		"not a result":       {"Bearer alice", "sample", caps, retry(key, state, `"Paris"`)},
	} {
		got := modernCall(t, bt, srv.URL, c.auth, "x", c.tool, c.caps, c.extra)
		if got.Error == nil || got.Error.Code != -32602 || got.status != http.StatusBadRequest {
			t.Errorf("%s: %+v (HTTP %d), want -32602 on 400", name, got, got.status)
		}
		if n := bt.pending.len(); n != 1 {
			t.Fatalf("%s: %d calls pending, want alice's still", name, n)
		}
	}
	// Missing responses: asked again, same state (the spec's SHOULD).
	for name, extra := range map[string]string{
		"no responses": `,"requestState":"` + state + `"`,
		"wrong key":    retry(key+"x", state, sampled),
	} {
		got := modernCall(t, bt, srv.URL, "Bearer alice", "y", "sample", caps, extra)
		if got.Error != nil {
			t.Fatalf("%s: %+v %s", name, got.Error, got.Error.Data)
		}
		if k := oneRequest(t, got, "sampling/createMessage"); k != key || got.Result.RequestState != state {
			t.Errorf("%s: asked %s with state %s, want %s again with %s", name, k, got.Result.RequestState, key, state)
		}
	}
	r = modernCall(t, bt, srv.URL, "Bearer alice", "2", "sample", caps, retry(key, state, sampled))
	if r.Error != nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "sampled: Paris & co" {
		t.Fatalf("alice's retry: %+v", r)
	}
	// A state is good once.
	if again := modernCall(t, bt, srv.URL, "Bearer alice", "3", "sample", caps, retry(key, state, sampled)); again.Error == nil || again.Error.Code != -32602 {
		t.Errorf("replayed retry: %+v, want -32602", again)
	}
}

// A client that never retries: after PendingTimeout the call is released
// and the server's request answered with an error; a late retry is -32602.
func TestMRTRNeverRetried(t *testing.T) {
	errs := make(chan error, 1)
	srv := mrtrUpstream(t, errs)
	bt := mrtrBridge(t, srv, 100*time.Millisecond)
	r := modernCall(t, bt, srv.URL, "", "1", "sample", `{"sampling":{}}`, "")
	key := oneRequest(t, r, "sampling/createMessage")
	select {
	case err := <-errs:
		t.Logf("the server's request got: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server's sampling request was never answered after the timeout")
	}
	if n := bt.pending.len(); n != 0 {
		t.Errorf("%d calls pending after the timeout", n)
	}
	if late := modernCall(t, bt, srv.URL, "", "2", "sample", `{"sampling":{}}`, retry(key, r.Result.RequestState, sampled)); late.Error == nil || late.Error.Code != -32602 {
		t.Errorf("late retry: %+v, want -32602", late)
	}
}

// The upstream goes away while the call waits: the retry gets an error
// with its own id, not a hang.
func TestMRTRUpstreamGone(t *testing.T) {
	srv := mrtrUpstream(t, make(chan error, 1))
	bt := mrtrBridge(t, srv, 0)
	r := modernCall(t, bt, srv.URL, "", "1", "sample", `{"sampling":{}}`, "")
	key := oneRequest(t, r, "sampling/createMessage")
	// The listener first: the held session's GET stream, cut by
	// CloseClientConnections, is opened again at once (watch), and
	// srv.Close waits for every request it has accepted.
	srv.Listener.Close()
	srv.CloseClientConnections()
	srv.Close()
	// The bridge fails the retry with the reply the proxy writes (with
	// the retry's id): a fixed message, the cause for the log only.
	resp, err := bt.RoundTrip(modernCallRequest(srv.URL, "", "2", "sample", `{"sampling":{}}`, retry(key, r.Result.RequestState, sampled)))
	var e *reply.Error
	if resp != nil || !errors.As(err, &e) || e.Code != -32603 || e.Status != http.StatusBadGateway ||
		!strings.Contains(fmt.Sprint(e.Data), "bridge_input_not_delivered") || strings.Contains(e.Message, "127.0.0.1") {
		t.Fatalf("retry after the upstream left: %v, %v (reply %+v), want a 502 -32603 bridge_input_not_delivered naming no address", resp, err, e)
	}
}
