package stdio

import (
	"io"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// TestSharedCallsPlacesComeBackOnEveryPath: a call on the shared process
// gives its place in stdio_calls back, and the bytes it held for its
// reader in the budget of queued bytes, however it ends: answered as JSON,
// answered on a stream read to its end, its client gone before reading
// the stream, its client gone while the call waits, timed out, refused
// past the caller's places, or ended by the process's exit. With a table
// of 4 places driven through every path many times over, the table is
// empty after each round, and a leaked place would refuse the round's
// calls well before the last.
func TestSharedCallsPlacesComeBackOnEveryPath(t *testing.T) {
	t.Parallel()
	const places = 4
	tr, _ := start(t, "modern", func(tr *Transport) {
		tr.Caller = callersByAuthorization
		tr.Calls = caller.NewTable(caller.TableOptions{Name: TableCalls, Cap: places, SharePercent: 100})
	})
	slow, _ := start(t, "modern", func(tr *Transport) {
		tr.Caller = callersByAuthorization
		tr.Calls = caller.NewTable(caller.TableOptions{Name: TableCalls, Cap: places, SharePercent: 100})
		tr.RequestTimeout = 200 * time.Millisecond
	})
	// Asked again if a busy machine let the shared process's start time
	// out (the era probe has its own wait, not RequestTimeout).
	waitFor(t, "the slow transport to serve", func() bool {
		return text(do(t, slow, "POST", "", toolCall(1, "echo", map[string]any{"text": "warm"}), as("a")).last()) == "warm"
	})
	a := as("a")
	echo := func(id int, what string) {
		t.Helper()
		if e := do(t, tr, "POST", "", toolCall(id, "echo", map[string]any{"text": what}), a); text(e.last()) != what {
			t.Fatalf("%s: echo = %d %v", what, e.status, e.msgs)
		}
	}
	empty := func(tr *Transport, what string) {
		t.Helper()
		waitFor(t, what+": the table and the budget of queued bytes to be empty", func() bool { return tr.Calls.Len() == 0 && tr.queued.Len() == 0 })
	}
	for round := range 3 * places {
		id := 1000 * (round + 1)
		echo(id, "json")

		resp, err := tr.RoundTrip(withHeader(sseRequest(t, toolCall(id+1, "echo", map[string]any{"text": "sse"})), a))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		empty(tr, "a stream read to its end")

		if resp, err = tr.RoundTrip(withHeader(sseRequest(t, toolCall(id+2, "echo", map[string]any{"text": "gone"})), a)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		empty(tr, "a stream closed unread")

		var release []func()
		for i := range places {
			release = append(release, holdShared(t, tr, a, id+10+i))
		}
		waitFor(t, "the held calls in flight", func() bool { return sharedBusy(tr) == places })
		if e := do(t, tr, "POST", "", toolCall(id+3, "echo", map[string]any{"text": "over"}), a); e.status != http.StatusServiceUnavailable {
			t.Fatalf("a call past the table = %d %v, want 503", e.status, e.msgs)
		}
		for _, r := range release {
			r()
		}
		empty(tr, "calls whose clients left")

		if e := do(t, slow, "POST", "", toolCall(id+4, "never", nil), a); errorData(e.last())["reason"] != "stdio_request_timeout" {
			t.Fatalf("a call never answered = %d %v, want stdio_request_timeout", e.status, e.msgs)
		}
		empty(slow, "a call timed out")

	}
	// The process's exit, once: a crashed shared process restarts after
	// a backoff.
	pid, err := strconv.Atoi(text(do(t, tr, "POST", "", toolCall(5, "pid", nil), a).last()))
	if err != nil {
		t.Fatal(err)
	}
	holdShared(t, tr, a, 20)
	holdShared(t, tr, a, 21)
	waitFor(t, "calls in flight on the process", func() bool { return sharedBusy(tr) == 2 })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	empty(tr, "calls the process's exit ended")
	// Asked again while the restart's backoff lasts.
	waitFor(t, "a call after every path", func() bool {
		return text(do(t, tr, "POST", "", toolCall(1, "echo", map[string]any{"text": "again"}), a).last()) == "again"
	})
	empty(tr, "the end")
}

func withHeader(req *http.Request, h http.Header) *http.Request {
	for k, v := range h {
		req.Header[k] = v
	}
	return req
}
