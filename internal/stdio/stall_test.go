package stdio

import (
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWriteCutMidLineEndsProcess: a request written while the process
// does not read its stdin (busy with one request at a time) fails at its
// write deadline with part of its line in the pipe. Nothing may follow
// that part on the pipe (the stdio transport: only whole MCP messages on
// stdin; go-sdk's StdioTransport ends its connection on a broken one), so
// the process is ended and the next request gets a new one, not a line
// glued to the remnant.
func TestWriteCutMidLineEndsProcess(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "modern,strict", func(tr *Transport) { tr.RequestTimeout = 2 * time.Second })
	pid, err := strconv.Atoi(text(do(t, tr, "POST", "", toolCall(1, "pid", nil), nil).last()))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(do(t, tr, "POST", "", toolCall(2, "stall", nil), nil).last()); got != "stalled" {
		t.Fatalf("stall = %q", got)
	}
	// More than a pipe holds: its write stops part-way, then times out.
	big := do(t, tr, "POST", "", toolCall(3, "echo", map[string]any{"text": strings.Repeat("x", 1<<20)}), nil)
	if big.status == http.StatusOK && text(big.last()) != "" {
		t.Fatalf("a request to a process not reading was answered: %d", big.status)
	}
	_ = syscall.Kill(pid, syscall.SIGUSR1) // the process reads its stdin again, if it still runs
	// Asked again if a busy machine let the question itself time out (the
	// broken line is answered at once: the process exits on it).
	var e exchange
	for try := 1; try <= 3; try++ {
		if e = do(t, tr, "POST", "", toolCall(4, "echo", map[string]any{"text": "after"}), nil); reason(e.last()) != "stdio_request_timeout" {
			break
		}
	}
	if got := text(e.last()); got != "after" {
		t.Errorf("the request after a write cut mid-line = %d %v, want echo %q", e.status, e.msgs, "after")
	}
}
