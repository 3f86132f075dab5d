package stdio

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// callersByAuthorization names a request's caller by its Authorization,
// as the sidecar does with verified credentials.
var callersByAuthorization = (&caller.Resolver{Credentials: []string{"Authorization"}}).Of

func as(who string) http.Header { return http.Header{"Authorization": {"Bearer " + who}} }

// holdShared starts a call on the shared process that is never answered,
// as the caller named by h, until the test ends or the returned func is
// called.
func holdShared(t *testing.T, tr *Transport, h http.Header, id int) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://stdio.invalid/mcp", strings.NewReader(toolCall(id, "never", nil)))
		for k, v := range h {
			req.Header[k] = v
		}
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}()
	return cancel
}

// sharedBusy is how many calls are in flight on the shared process.
func sharedBusy(tr *Transport) int {
	tr.mu.Lock()
	p := tr.shared
	tr.mu.Unlock()
	if p == nil {
		return 0
	}
	n, _ := p.busy()
	return n
}

func errorData(m map[string]any) map[string]any {
	e, _ := m["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	return d
}

// TestSharedCallsCallerShare: the calls in flight on the process every
// 2026-07-28 caller shares are a table callers share, as every other
// (docs/security.md): 256 places, a quarter of them (64) for one caller.
// A caller holding its share is refused the next call as the other
// tables refuse (429, Retry-After, -32603, data.reason
// caller_share_exhausted, data.table stdio_calls) while another caller's
// call goes through; once one of its own calls ends it is served again.
func TestSharedCallsCallerShare(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "modern", func(tr *Transport) { tr.Caller = callersByAuthorization })
	const share = 64
	a, b := as("a"), as("b")
	var first func()
	for i := range share {
		if r := holdShared(t, tr, a, 100+i); i == 0 {
			first = r
		}
	}
	waitFor(t, "a's calls in flight", func() bool { return sharedBusy(tr) == share })
	e := do(t, tr, "POST", "", toolCall(7, "echo", map[string]any{"text": "one more"}), a)
	d := errorData(e.last())
	errObj, _ := e.last()["error"].(map[string]any)
	code, _ := errObj["code"].(float64)
	if e.status != http.StatusTooManyRequests || e.header.Get("Retry-After") == "" || code != -32603 ||
		d["reason"] != "caller_share_exhausted" || d["table"] != "stdio_calls" || e.last()["id"] != float64(7) {
		t.Errorf("a's call past its share = %d %v %v, want 429 with Retry-After, -32603, caller_share_exhausted in stdio_calls, id 7", e.status, e.header, e.msgs)
	}
	if e := do(t, tr, "POST", "", toolCall(8, "echo", map[string]any{"text": "b's"}), b); text(e.last()) != "b's" {
		t.Errorf("another caller's call while a holds its share = %d %v", e.status, e.msgs)
	}
	first()
	waitFor(t, "one of a's calls to end", func() bool { return sharedBusy(tr) == share-1 })
	if e := do(t, tr, "POST", "", toolCall(9, "echo", map[string]any{"text": "again"}), a); text(e.last()) != "again" {
		t.Errorf("a's call once one of its own ended = %d %v", e.status, e.msgs)
	}
}

// TestSharedCallsFullAndProcessEnd: with the whole table of calls held,
// a new caller is refused as a full table refuses (503, data.reason
// stdio_calls_exhausted); the shared process's end answers the calls in
// flight and gives their places back, so the next call is served by the
// process started again.
func TestSharedCallsFullAndProcessEnd(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "modern", func(tr *Transport) {
		tr.Caller = callersByAuthorization
		tr.Calls = caller.NewTable(caller.TableOptions{Name: TableCalls, Cap: 2, SharePercent: 100})
	})
	a, b := as("a"), as("b")
	pid, err := strconv.Atoi(text(do(t, tr, "POST", "", toolCall(1, "pid", nil), a).last()))
	if err != nil {
		t.Fatal(err)
	}
	holdShared(t, tr, a, 2)
	holdShared(t, tr, a, 3)
	waitFor(t, "a's calls in flight", func() bool { return sharedBusy(tr) == 2 })
	e := do(t, tr, "POST", "", toolCall(4, "echo", map[string]any{"text": "b's"}), b)
	if d := errorData(e.last()); e.status != http.StatusServiceUnavailable || d["reason"] != "stdio_calls_exhausted" || d["table"] != "stdio_calls" {
		t.Errorf("b's call with the table full = %d %v, want 503 stdio_calls_exhausted", e.status, e.msgs)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the places to be given back", func() bool { return tr.Calls.Len() == 0 })
	if e := do(t, tr, "POST", "", toolCall(5, "echo", map[string]any{"text": "b's"}), b); text(e.last()) != "b's" {
		t.Errorf("b's call after the process ended = %d %v", e.status, e.msgs)
	}
}
