package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// pongs wraps a legacy server and counts the client's responses posted to
// it (before a retry answers the elicitation, every one is an answer to
// a ping), closing enough once there are want of them.
type pongs struct {
	next   http.Handler
	n      atomic.Int32
	want   int32
	enough chan struct{}
}

func (p *pongs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if m, err := rewrite.ParseMessage(b); err == nil && m.Kind == rewrite.KindResponse && p.n.Add(1) == p.want {
			close(p.enough)
		}
	}
	p.next.ServeHTTP(w, r)
}

// serverErrors is a go-sdk server's logger: the first record at level
// Error (go-sdk logs "keepalive ping failed; closing session" so) is sent
// on got, with its error, for a test waiting on it.
type serverErrors struct {
	once sync.Once
	got  chan string
}

func (h *serverErrors) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *serverErrors) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *serverErrors) WithGroup(string) slog.Handler                { return h }
func (h *serverErrors) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	h.once.Do(func() { go func() { h.got <- msg }() })
	return nil
}

// A legacy server with go-sdk's KeepAlive pings its client on the
// session's standalone stream (no request is tied to a keep-alive) and
// closes the session when the ping fails; without a GET stream open the
// ping cannot even be delivered. The session the bridge holds for a
// modern caller opens that stream and answers the ping (2025-11-25
// basic/utilities/ping), so the session outlives the keep-alive
// intervals and a call waiting for the client's input (input_required)
// is still there for the retry.
func TestHeldSessionAnswersKeepAlive(t *testing.T) {
	var opened atomic.Int32
	failed := &serverErrors{got: make(chan string)}
	s := mcp.NewServer(&mcp.Implementation{Name: "pinger", Version: "1"}, &mcp.ServerOptions{
		KeepAlive:          100 * time.Millisecond,
		Logger:             slog.New(failed),
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { opened.Add(1) }})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: el.Action + " " + el.Content["name"].(string)}}}, nil
	})
	const rounds = 3 // keep-alive pings the held session must live through
	up := &pongs{next: testupstream.Handler(s, nil), want: rounds, enough: make(chan struct{})}
	bt, u := newBridge(t, up, 0)
	caps := `{"elicitation":{}}`

	r := modernCall(t, bt, u, "", "1", "ask", caps, "")
	key := oneRequest(t, r, "elicitation/create")
	select {
	case <-up.enough:
	case msg := <-failed.got:
		t.Errorf("the server gave up on the held session while its call waited for input: %s", msg)
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("neither the keep-alive pings answered nor the session ended")
	}
	r = modernCall(t, bt, u, "", "2", "ask", caps, retry(key, r.Result.RequestState, `{"action":"accept","content":{"name":"octocat"}}`))
	if r.Error != nil {
		t.Fatalf("retry: error %d %s, want the tool's result", r.Error.Code, r.Error.Data)
	}
	if len(r.Result.Content) != 1 || r.Result.Content[0].Text != "accept octocat" {
		t.Fatalf("retry: %+v, want the tool's result", r.Result)
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("the upstream saw %d sessions opened, want the one held", n)
	}
}
