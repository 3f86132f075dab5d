package bridge

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// answers wraps a legacy server and closes got when a client's response
// to a server request (a POST of a JSON-RPC result or error) reaches it.
type answers struct {
	next http.Handler
	once sync.Once
	got  chan struct{}
}

func (a *answers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if m, err := rewrite.ParseMessage(b); err == nil && (m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError) {
			a.once.Do(func() { close(a.got) })
		}
	}
	a.next.ServeHTTP(w, r)
}

// A legacy server may ping its client on the session's GET stream
// (2025-11-25 basic/utilities/ping: the receiver MUST respond promptly),
// and go-sdk's KeepAlive closes a session whose client does not answer.
// The listen a bridged subscriptions/listen holds on its own legacy
// session reads that stream: the server's ping is answered, as the
// bridge answers one on a call's reply stream, not dropped (which ended
// every such listen after one keep-alive interval).
func TestListenAnswersServerPing(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "pinger", Version: "1"}, &mcp.ServerOptions{
		KeepAlive:    50 * time.Millisecond,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	up := &answers{next: testupstream.Handler(s, nil), got: make(chan struct{})}
	bt, u := newBridge(t, up, 0)
	body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp, err := roundTrip(bt, modernPost(t.Context(), u, "subscriptions/listen", body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("listen: %d", resp.StatusCode)
	}
	ended := make(chan struct{})
	go func() {
		io.Copy(io.Discard, resp.Body)
		close(ended)
	}()
	select {
	case <-up.got:
	case <-ended:
		// The answer, when there is one, is posted before the bridge
		// reads on, so it has reached the server by now.
		select {
		case <-up.got:
		default:
			t.Fatal("the server's ping on the listen's stream went unanswered, and the server ended the session (and the listen)")
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("neither an answer to the server's ping nor the listen's end")
	}
}
