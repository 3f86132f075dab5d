package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestHandshakeReplyWithForeignIDIsNotSpliced: a JSON initialize or
// server/discover reply whose id is not the request's is forwarded as the
// upstream sent it; with the request's own id it is spliced (the control).
func TestHandshakeReplyWithForeignIDIsNotSpliced(t *testing.T) {
	t.Parallel()
	// One result for both handshakes: supportedVersions names 2026-07-28,
	// without which a server/discover reply is not spliced (era.go).
	result := `{"protocolVersion":"2025-11-25","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"}}`
	for _, tt := range []struct {
		name, replyID string
		spliced       bool
	}{
		{"own id", "7", true},
		{"foreign id", "8", false},
		{"foreign string id", `"7"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reply := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, tt.replyID, result)
			u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, reply)
			})
			for _, req := range []string{initReq,
				`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`} {
				_, b := sidecartest.Post(t, u, req, nil)
				if got := bytes.Contains(b, []byte("io.modelcontextprotocol/skills")); got != tt.spliced {
					t.Errorf("reply id %s: spliced %v, want %v: %s", tt.replyID, got, tt.spliced, b)
				}
				if !tt.spliced && string(b) != reply {
					t.Errorf("reply changed: got %s, want %s", b, reply)
				}
			}
		})
	}
}

// TestHandshakeReplyWithRespelledIDIsSpliced: an id is its JSON value,
// not its spelling, and a go-sdk server answers the id it decoded, spelled
// its own way (1.0 comes back as 1, "\u0037" as "7"). The reply to the
// caller's initialize is still that request's reply, on an SSE stream and
// as one JSON reply, and carries the sidecar's declaration.
func TestHandshakeReplyWithRespelledIDIsSpliced(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	for _, jsonReply := range []bool{false, true} {
		up := testupstream.Serve(t, s, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonReply})
		side := newSidecar(t, up.URL).URL + "/mcp"
		for _, id := range []string{`1.0`, `10e-1`, `"\u0037"`} {
			req := strings.Replace(initReq, `"id":7`, `"id":`+id, 1)
			_, direct := sidecartest.Post(t, up.URL, req, nil)
			if bytes.Contains(direct, []byte(`"id":`+id)) {
				t.Fatalf("go-sdk echoed id %s as sent (%s): this test needs a server that re-spells it", id, direct)
			}
			if _, b := sidecartest.Post(t, side, req, nil); !bytes.Contains(b, []byte("io.modelcontextprotocol/skills")) {
				t.Errorf("JSONResponse %v, initialize with id %s: reply not spliced: %s", jsonReply, id, b)
			}
		}
	}
}

// TestListenEndWithRespelledIDIsHeld: a go-sdk upstream honours nothing
// of a listen that asks only for agentsListChanged and ends its stream at
// once with the listen's result, echoing the id spelled its own way (1.0
// as 1). That is still the end of this listen, which the sidecar holds
// open for its own notifications: after the acknowledgement the client
// gets the sidecar's agents notification, not the upstream's result and
// the end of the stream.
func TestListenEndWithRespelledIDIsHeld(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	inner := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})
	served := make(chan struct{}, 1)
	up := testupstream.ServeHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	u, _ := url.Parse(up.URL)
	hub := notify.New(notify.Options{})
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar(), Notify: hub})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)
	t.Cleanup(p.EndStreams)

	ctx, cancel := context.WithTimeout(context.Background(), clientBound) // hang guard
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1.0,"method":"subscriptions/listen","params":{"notifications":{"agentsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, side.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := rewrite.NewReader(resp.Body, 1<<20)
	next := func() string {
		ev, err := rd.Next()
		if err != nil {
			return "end of stream: " + err.Error()
		}
		return string(ev.Data)
	}
	if ack := next(); !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event %s, want the acknowledgement", ack)
	}
	<-served // the upstream has ended its stream
	hub.Publish(catalog.Changes{Agents: true})
	if ev := next(); !strings.Contains(ev, "notifications/agents/list_changed") {
		t.Fatalf("after the acknowledgement: %s; want the sidecar's agents notification on a stream held open", ev)
	}
}
