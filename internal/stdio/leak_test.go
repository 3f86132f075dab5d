package stdio

import (
	"bufio"
	"context"
	"net/http"
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
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://stdio.invalid/mcp", strings.NewReader(listen))
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var mu sync.Mutex
	var got []string
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}
		}
	}()
	waitFor(t, "the listen's acknowledgement", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	// Another request: its reply, then a notifications/message naming nothing.
	if e := do(t, tr, "POST", "", toolCall(1, "later", nil), nil); text(e.last()) != "later" {
		t.Fatalf("later = %d %v", e.status, e.msgs)
	}
	waitFor(t, "the late message to be routed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 2 || m.event(EventDroppedMessage) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 2 {
		t.Errorf("the listen stream got %q, a message naming no request", got[2:])
	}
}
