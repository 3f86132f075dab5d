package stdio

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
)

// A flood of messages a reader does not read: each message a quarter of
// the line limit, more of them than the line limit holds, fewer than the
// count bound (64 for a call's stream, 256 for a session's GET stream).
const (
	floodMaxLine = 64 << 10
	floodSize    = 16 << 10
	floodCount   = 32
	// floodHeld is the most a stream may hand its reader: the message
	// being written to it, and the queue's line limit of bytes behind it.
	floodHeld = 1 + floodMaxLine/floodSize
)

// TestSlowCallStreamBoundedByBytes: the messages queued for a call's
// stream whose reader does not read are bounded in bytes, not only in
// number: past the line limit's worth they are dropped and counted, as
// past the count bound. The process's notifications are all routed before
// its reply, so once the reply is in, the stream holds all it will.
func TestSlowCallStreamBoundedByBytes(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "modern", func(tr *Transport) { tr.MaxLine = floodMaxLine })
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{"count":32,"size":16384},` +
		`"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	req := sseRequest(t, body)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waitFor(t, "the flood's reply to be routed", func() bool { return sharedBusy(tr) == 0 })
	progress, last := 0, map[string]any(nil)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if last = decode(t, []byte(d)); last["method"] == "notifications/progress" {
				progress++
			}
		}
	}
	if text(last) != "flooded" {
		t.Fatalf("the flood's reply = %v", last)
	}
	if progress < 1 || progress > floodHeld {
		t.Errorf("a reader that did not read got %d of %d messages of %d bytes, want 1 to %d (a line limit of %d bytes queued)",
			progress, floodCount, floodSize, floodHeld, floodMaxLine)
	}
	if d := m.event(EventDroppedMessage); d != floodCount-progress {
		t.Errorf("dropped %d, want the %d not delivered", d, floodCount-progress)
	}
}

// TestSlowGetStreamBoundedByBytes: the same for a legacy session's GET
// stream, which gets the messages naming no request while more than one
// is in flight.
func TestSlowGetStreamBoundedByBytes(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "", func(tr *Transport) { tr.MaxLine = floodMaxLine })
	sid := initialize(t, tr)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://stdio.invalid/mcp", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	hold(t, tr, sid, 2) // with two requests in flight, what names none goes to the GET stream
	e := do(t, tr, "POST", sid, toolCall(3, "flood", map[string]any{"count": floodCount, "size": floodSize}), nil)
	if text(e.last()) != "flooded" {
		t.Fatalf("flood = %d %v", e.status, e.msgs)
	}
	// Every message before the reply has been routed: queued or dropped.
	delivered := floodCount - m.event(EventDroppedMessage)
	if delivered < 1 || delivered > floodHeld {
		t.Errorf("a GET stream that was not read took %d of %d messages of %d bytes, want 1 to %d (a line limit of %d bytes queued)",
			delivered, floodCount, floodSize, floodHeld, floodMaxLine)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for got := 0; got < min(delivered, floodCount); {
		if !sc.Scan() {
			t.Fatalf("the GET stream ended after %d of the %d messages it took: %v", got, delivered, sc.Err())
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if msg := decode(t, []byte(d)); msg["method"] != "notifications/message" {
				t.Errorf("GET stream event %d = %v", got, msg)
			}
			got++
		}
	}
}
