package stdio

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestUnnamedMessageSkipsAnotherCallersListen: on the shared process a
// message naming no request (a log line a finished call left behind) does
// not reach a subscriptions/listen stream, whose notifications each name
// it (2026-07-28: _meta subscriptionId), and which may be another
// caller's: it is dropped and counted.
func TestUnnamedMessageSkipsAnotherCallersListen(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "modern", nil)
	const listen = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	req := sseRequest(t, listen)
	got := streamData(t, tr, req)
	waitFor(t, "the listen's acknowledgement", func() bool { return len(got()) == 2 })
	// Another request: its reply, then a notifications/message naming nothing.
	if e := do(t, tr, "POST", "", toolCall(1, "later", nil), nil); text(e.last()) != "later" {
		t.Fatalf("later = %d %v", e.status, e.msgs)
	}
	waitFor(t, "the late message to be routed", func() bool { return len(got()) > 2 || m.event(EventDroppedMessage) > 0 })
	if d := got(); len(d) > 2 {
		t.Errorf("the listen stream got %q, a message naming no request", d[2:])
	}
}

// TestLateProgressSkipsAnotherCaller: on the shared process a
// notifications/progress whose token names a call no longer in flight
// (answered, timed out, or its caller gone while the server goes on)
// names a request, just not one waiting: it is dropped and counted, not
// handed to another caller's request because that one is alone in flight.
func TestLateProgressSkipsAnotherCaller(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "modern", nil)
	// Another caller's request, in flight until the test ends.
	req := sseRequest(t, toolCall(9, "never", nil))
	got := streamData(t, tr, req)
	waitFor(t, "the other call in flight", func() bool {
		tr.mu.Lock()
		p := tr.shared
		tr.mu.Unlock()
		if p == nil {
			return false
		}
		n, _ := p.busy()
		return n == 1
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lateprogress","arguments":{"text":"mine"},` +
		`"_meta":{"progressToken":"tok","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	if e := do(t, tr, "POST", "", body, nil); text(e.last()) != "done" {
		t.Fatalf("lateprogress = %d %v", e.status, e.msgs)
	}
	waitFor(t, "the late progress to be routed", func() bool { return len(got()) > 0 || m.event(EventDroppedMessage) > 0 })
	if d := got(); len(d) > 0 {
		t.Errorf("another caller's request got %q, the progress of a call no longer in flight", d)
	}
}

// sseRequest is a POST of body to the Transport, as a client that takes
// an SSE stream sends it, bounded by the hang guard.
func sseRequest(t *testing.T, body string) *http.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://stdio.invalid/mcp", strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// streamData sends req through tr in the background and gathers the data
// of the SSE events its reply carries; got returns those seen so far. The
// round trip is not waited for: a call in flight may not answer its head
// until the test ends.
func streamData(t *testing.T, tr *Transport, req *http.Request) (got func() []string) {
	t.Helper()
	var mu sync.Mutex
	var data []string
	go func() {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				mu.Lock()
				data = append(data, d)
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(data)
	}
}
