package stdio

import (
	"net/http"
	"testing"
)

// TestSessionCallsBounded: a legacy session's own process holds at most
// 64 calls in flight (docs/stdio.md), so one client cannot make the
// sidecar hold any number of calls, each with its queue, by keeping them
// open. The next is refused as a full table refuses (HTTP 503, -32603,
// data.reason stdio_session_calls_exhausted, data.table
// stdio_session_calls, the caller's id; no Retry-After, which is for a
// share), counted, and the session goes on: another session of the same
// caller is served meanwhile, and once one of its calls ends it is served
// again.
func TestSessionCallsBounded(t *testing.T) {
	t.Parallel()
	const bound = 64
	tr, m := start(t, "", func(tr *Transport) { tr.RequestTimeout = hang * 2 })
	sid, other := initialize(t, tr), initialize(t, tr)
	busy := func() int { n, _ := tr.session(sid).p.busy(); return n }
	in := http.Header{"Mcp-Session-Id": {sid}}
	var first func()
	for i := range bound {
		if r := holdShared(t, tr, in, 100+i); i == 0 {
			first = r
		}
	}
	waitFor(t, "the session's calls in flight", func() bool { return busy() == bound })
	e := do(t, tr, "POST", sid, toolCall(7, "echo", map[string]any{"text": "one more"}), nil)
	errObj, _ := e.last()["error"].(map[string]any)
	code, _ := errObj["code"].(float64)
	d := errorData(e.last())
	if e.status != http.StatusServiceUnavailable || e.header.Get("Retry-After") != "" || code != -32603 ||
		d["reason"] != "stdio_session_calls_exhausted" || d["table"] != "stdio_session_calls" || e.last()["id"] != float64(7) {
		t.Errorf("a call past the session's %d = %d %v %v, want 503 without Retry-After, -32603, stdio_session_calls_exhausted in stdio_session_calls, id 7",
			bound, e.status, e.header, e.msgs)
	}
	if n := busy(); n != bound {
		t.Errorf("%d calls in flight on the session after the refusal, want %d", n, bound)
	}
	if n := m.refused("stdio_session_calls", "full"); n != 1 {
		t.Errorf("refusals counted = %d, want 1", n)
	}
	if e := do(t, tr, "POST", other, toolCall(8, "echo", map[string]any{"text": "other"}), nil); text(e.last()) != "other" {
		t.Errorf("another session's call meanwhile = %d %v", e.status, e.msgs)
	}
	first()
	waitFor(t, "one of the session's calls to end", func() bool { return busy() == bound-1 })
	if e := do(t, tr, "POST", sid, toolCall(9, "echo", map[string]any{"text": "again"}), nil); text(e.last()) != "again" {
		t.Errorf("the session's call once one of its own ended = %d %v", e.status, e.msgs)
	}
}
