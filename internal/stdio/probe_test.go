package stdio

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/stdioserver"
)

// TestProbeThatTimedOutAsksAgain: a 2026-07-28 server slow to answer its
// first message (it answers server/discover only once the test opens its
// gate) lets the probe's wait run out; that is no answer, so the era
// stays unknown and the probe asks again, rather than taking the
// sidecar's own timeout for the server's refusal. Once the gate is open,
// a request without a session is served on the shared process.
func TestProbeThatTimedOutAsksAgain(t *testing.T) {
	t.Parallel()
	gate := t.TempDir()
	argv, env := testCommand(t, "modern,gated")
	env = append(env, stdioserver.GateEnv+"="+gate)
	tr := &Transport{Command: argv, Env: env, Grace: 500 * time.Millisecond,
		Probe: time.Second, RequestTimeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	tr.Start(ctx)
	t.Cleanup(func() {
		cancel()
		_ = tr.Close()
	})
	asked := func() int {
		m, _ := filepath.Glob(filepath.Join(gate, "asked-*"))
		return len(m)
	}
	decided := func() bool {
		select {
		case <-tr.probed:
			return true
		default:
			return false
		}
	}
	// The gate is shut: every server/discover goes unanswered, so the
	// probe cannot have decided; a second one asked means the first was
	// given up on and the era left open.
	waitFor(t, "a second server/discover, or the probe's verdict", func() bool { return asked() >= 2 || decided() })
	if decided() {
		t.Errorf("the probe decided (serves 2026-07-28: %v) with server/discover unanswered", tr.modern)
	}
	if err := os.WriteFile(filepath.Join(gate, "open"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Asked again if a busy machine let the shared process's start time
	// out; a 400 is the legacy verdict.
	waitFor(t, "a 2026-07-28 request served once the server answers", func() bool {
		e := do(t, tr, "POST", "", toolCall(1, "echo", map[string]any{"text": "late"}), nil)
		if e.status == http.StatusBadRequest {
			t.Fatalf("a 2026-07-28 request once the server answers = %d %v, want it served", e.status, e.msgs)
		}
		return text(e.last()) == "late"
	})
	if !tr.Ready() {
		t.Error("not ready after the probe was answered")
	}
}

// TestProbeGivenUpOnGivesBackItsBytes: a probe whose wait runs out (the
// server's gate stays shut, so server/discover goes unanswered whatever
// the timing) leaves nothing in the budget of queued bytes: what stands
// for its reply (the error the process's end answers it with, or a reply
// in as the wait ran out) is given back as the probe ends, as a caller's
// stream gives back what it leaves.
func TestProbeGivenUpOnGivesBackItsBytes(t *testing.T) {
	t.Parallel()
	argv, env := testCommand(t, "modern,gated")
	env = append(env, stdioserver.GateEnv+"="+t.TempDir())
	tr := &Transport{Command: argv, Env: env, Grace: 500 * time.Millisecond,
		Probe: 200 * time.Millisecond, RequestTimeout: time.Second}
	tr.defaults()
	t.Cleanup(func() { _ = tr.Close() })
	for i := range 3 {
		if _, answered := tr.ask(context.Background(), probeDiscover); answered {
			t.Fatalf("probe %d: answered with the gate shut", i)
		}
		if n := tr.queued.Len(); n != 0 {
			t.Errorf("after probe %d was given up on: %d bytes held in the budget, want 0", i, n)
		}
	}
}
