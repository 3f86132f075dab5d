package bridge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// lookedBody is a request body in memory that counts every look at its
// bytes; knows, when set, makes it know its message (rewrite.Parsed), as
// the proxy's bodies do.
type lookedBody struct {
	hop.MemBody
	msg    rewrite.Message
	knows  bool
	looked int
}

func newLookedBody(s string, knows bool) *lookedBody {
	b := &lookedBody{knows: knows}
	b.Reset([]byte(s))
	if knows {
		b.msg, _ = rewrite.ParseMessage([]byte(s))
	}
	return b
}

func (b *lookedBody) ParsedMessage() (rewrite.Message, bool) { return b.msg, b.knows }
func (b *lookedBody) Bytes() []byte                          { b.looked++; return b.MemBody.Bytes() }
func (b *lookedBody) Read(p []byte) (int, error)             { b.looked++; return b.MemBody.Read(p) }

// requestMessage takes the message a body knows (rewrite.Parsed) without
// looking at its bytes, and parses any other body, which stays readable.
func TestRequestMessage(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`
	want, _ := rewrite.ParseMessage([]byte(body))
	for name, c := range map[string]struct {
		body       io.ReadCloser
		wantLooked bool
	}{
		"knows its message": {newLookedBody(body, true), false},
		"knows none":        {newLookedBody(body, false), true},
		"a plain body":      {io.NopCloser(strings.NewReader(body)), true},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://upstream/mcp", nil)
			req.Body = c.body
			m, ok, err := requestMessage(req)
			if err != nil || !ok {
				t.Fatalf("requestMessage: ok %v, %v", ok, err)
			}
			if diff := cmp.Diff(want, m); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if lb, isLooked := c.body.(*lookedBody); isLooked && (lb.looked > 0) != c.wantLooked {
				t.Errorf("the body's bytes looked at %d times; looked at: %v, want %v", lb.looked, lb.looked > 0, c.wantLooked)
			}
			if left, _ := io.ReadAll(req.Body); string(left) != body {
				t.Errorf("the body left to send is %q, want it whole", left)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, "http://upstream/mcp", strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`))
	if _, ok, err := requestMessage(req); ok || err != nil {
		t.Errorf("requestMessage of a batch: ok %v, %v; want not one message", ok, err)
	}
}

// A request whose body knows its message is bridged from that message,
// its bytes never looked at: the legacy front's call of a sealed session
// (to the modern-only peer) and the era bridge's modern call (to a
// go-sdk legacy server).
func TestBridgedBodyIsNotParsedAgain(t *testing.T) {
	t.Run("legacy front", func(t *testing.T) {
		fx := newFrontFixture(t, 0)
		resp, _ := post(t, fx.url, legacyInit, nil)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatal("no session minted")
		}
		b := newLookedBody(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, true)
		req, _ := http.NewRequest(http.MethodPost, fx.front.Upstream.String(), nil)
		req.Body, req.ContentLength = b, int64(b.Len())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		checkBridged(t, fx.front, req, b, `Echo: hi`)
	})
	t.Run("era bridge", func(t *testing.T) {
		bt, u := newBridge(t, demo.Handler(nil), 0)
		b := newLookedBody(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+fmt.Sprintf(testMeta, "{}")+`}}`, true)
		req, _ := http.NewRequest(http.MethodPost, u, nil)
		req.Body, req.ContentLength = b, int64(b.Len())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		checkBridged(t, bt, req, b, `"resultType":"complete"`)
	})
}

// checkBridged sends req through rt and wants a reply holding want, with
// b's bytes never looked at.
func checkBridged(t *testing.T, rt http.RoundTripper, req *http.Request, b *lookedBody, want string) {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), want) {
		t.Fatalf("reply %d %s, want 200 with %s", resp.StatusCode, got, want)
	}
	if b.looked > 0 {
		t.Errorf("the body's bytes were looked at %d times: its message parsed again", b.looked)
	}
}

// brokenBody is a request body whose reads fail, as a client's that broke
// off mid-body.
type brokenBody struct{}

func (brokenBody) Read([]byte) (int, error) { return 0, errors.New("the client's connection broke") }
func (brokenBody) Close() error             { return nil }

// A body that cannot be read fails the round trip: neither bridge sends
// the request on as though it held no message.
func TestUnreadableBodyFails(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://upstream/mcp", nil)
	req.Body = brokenBody{}
	if _, ok, err := requestMessage(req); err == nil || ok {
		t.Errorf("requestMessage of a body that fails: ok %v, %v; want the read's error", ok, err)
	}
	fx := newFrontFixture(t, 0)
	resp, _ := post(t, fx.url, legacyInit, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	bt, u := newBridge(t, demo.Handler(nil), 0)
	for name, c := range map[string]struct {
		rt  http.RoundTripper
		url string
		h   map[string]string
	}{
		"legacy front": {fx.front, fx.front.Upstream.String(), map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}},
		"era bridge":   {bt, u, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}},
	} {
		req, _ := http.NewRequest(http.MethodPost, c.url, nil)
		req.Body, req.ContentLength = brokenBody{}, 40
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.h {
			req.Header.Set(k, v)
		}
		if resp, err := c.rt.RoundTrip(req); err == nil {
			resp.Body.Close()
			t.Errorf("%s: a body that fails gave a reply %d, want the read's error", name, resp.StatusCode)
		}
	}
}

// A POST that is no single message (a batch) passes the legacy front on a
// session as it came, to the upstream, which answers it.
func TestFrontPassesABatchOn(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	fx := newFrontFixtureWith(t, 0, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen = append(seen, string(b))
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
			next.ServeHTTP(w, r)
		})
	})
	resp, _ := post(t, fx.url, legacyInit, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	const batch = `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	post(t, fx.url, batch, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(seen, batch) {
		t.Errorf("the batch did not reach the upstream as it came; the upstream saw %q", seen)
	}
}

// legacyReply of a complete result allocates nothing: it compares the
// result's resultType where it lies.
func TestLegacyReplyAllocations(t *testing.T) {
	m, _ := rewrite.ParseMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"complete"}}`))
	if n := testing.AllocsPerRun(100, func() { legacyReply("tools/call", m) }); n != 0 {
		t.Errorf("legacyReply of a complete result: %v allocations, want 0", n)
	}
}
