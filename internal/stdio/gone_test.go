package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// leaveBeforeReply sends body, a legacy initialize, as a client that
// accepts an SSE stream, and goes away without reading it: the stream is
// closed with the reply still unwritten. It returns the session id the
// reply's header named. When the process's reply is its only message,
// the Transport has it before it returns the stream, so it is the final
// event whose write finds the client gone.
func leaveBeforeReply(t *testing.T, tr *Transport, body string) string {
	t.Helper()
	req := sseRequest(t, body)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("initialize = %d %v, want a 200 SSE stream naming its session", resp.StatusCode, resp.Header)
	}
	_ = resp.Body.Close()
	return sid
}

// TestRefusedInitializeEndsWhenClientLeaves: the session of an initialize
// the server refuses ends at once (docs/stdio.md), also when its client
// went away just before the refusal was written to it. go-sdk's server
// answers an initialize whose params are not its params with an error,
// and with no other message before it.
func TestRefusedInitializeEndsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "gosdk", nil)
	sid := leaveBeforeReply(t, tr, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":7}}`)
	waitFor(t, "the refused session to end", func() bool { return tr.Sessions.Len() == 0 })
	if e := do(t, tr, "POST", sid, toolCall(1, "echo", map[string]any{"text": "hi"}), nil); e.status != http.StatusNotFound {
		t.Errorf("a request on the refused session = %d %v, want 404", e.status, e.msgs)
	}
}

// TestAcceptedInitializeKeptWhenClientLeaves: an initialize the server
// accepted made a session, whose id its reply's header carried, whether
// or not its client read the body: as a streamable HTTP server keeps a
// session its client left while the reply was under way, the session
// serves the next request with that id, and the Transport is ready.
func TestAcceptedInitializeKeptWhenClientLeaves(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "gosdk", nil)
	tr.ready.Store(false) // the probe's handshake made it ready; this one must too
	sid := leaveBeforeReply(t, tr, initReq)
	waitFor(t, "the handshake to make the Transport ready", tr.Ready)
	if e := do(t, tr, "POST", sid, toolCall(1, "echo", map[string]any{"text": "hi"}), nil); text(e.last()) != "hi" {
		t.Errorf("a request on the session = %d %v, want its echo", e.status, e.msgs)
	}
}

// TestAcceptedInitializeKeptWhenClientLeavesMidStream: the same when the
// client goes away while a message before the reply is being written to
// it, the reply being in already: the test server sends a notification
// before its initialize reply, and the stream is closed unread once the
// reply has left the pipe.
func TestAcceptedInitializeKeptWhenClientLeavesMidStream(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	tr.ready.Store(false)
	req := sseRequest(t, initReq)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	s := tr.session(sid)
	if resp.StatusCode != http.StatusOK || s == nil {
		t.Fatalf("initialize = %d %v, want 200 naming a live session", resp.StatusCode, resp.Header)
	}
	waitFor(t, "the initialize reply to leave the pipe", func() bool { n, _ := s.p.busy(); return n == 0 })
	_ = resp.Body.Close()
	waitFor(t, "the handshake to make the Transport ready", tr.Ready)
	if e := do(t, tr, "POST", sid, toolCall(1, "echo", map[string]any{"text": "hi"}), nil); text(e.last()) != "hi" {
		t.Errorf("a request on the session = %d %v, want its echo", e.status, e.msgs)
	}
}

// TestNextGivesTheReplyInWhenClientLeft: a client that went away while
// its call waited gets, from next, the reply that was in already, not its
// leaving: onFinal must see what the server answered (an accepted
// initialize keeps its session) whichever of the two the wait met first.
// The reply is put in as the pipe's reader puts it (taken off the pipe,
// then into final) and the caller's context is ended before the wait,
// so both are ready at once; each round is one draw of the wait's choice.
func TestNextGivesTheReplyInWhenClientLeft(t *testing.T) {
	t.Parallel()
	tr := &Transport{RequestTimeout: hang, MaxRequestTime: hang}
	p := &pipe{t: tr, pending: map[string]*call{}, tokens: map[string]*call{}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 64 {
		c := &call{id: json.RawMessage(`1`), pipeID: strconv.Itoa(i), msgs: newQueue(callQueue, 1<<20, caller.ID{}, newBudget(1<<20, 0, func(bool) {})), final: make(chan []byte, 1)}
		p.pending[c.pipeID] = c
		reply := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		if p.take(c.pipeID) != c {
			t.Fatal("the call was not in flight")
		}
		c.final <- reply
		m, fin, _ := tr.next(ctx, p, c, time.Now().Add(hang))
		if !fin || !bytes.Equal(m, reply) {
			t.Fatalf("round %d: next = %q final=%v, want the reply that was in", i, m, fin)
		}
	}
}
