package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestHangupWhileDrainingDoesNotKill: a SIGHUP (docs/behaviour.md: kill
// -HUP reloads the plugin folder) that comes while the sidecar shuts down
// gracefully must not end the process by the signal's default action,
// cutting what it is still serving: it goes on to drain and exits 0, as
// docs/cli.md says of a clean shutdown. The binary runs as its own process,
// since the test's cannot take a signal's default action.
func TestHangupWhileDrainingDoesNotKill(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "plugin")
	sidecartest.WriteTree(t, root, map[string]string{"skills/notes/SKILL.md": "---\nname: notes\ndescription: Notes.\n---\n# Notes\n"})
	s := startServed(t, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--annotations-file", "",
		"--log-format", "json", "--upstream", "http://127.0.0.1:1/mcp", "--auth-gate", "none", "--era-bridge", "off",
		"--plugin-dir", root, "--poll-interval", "1h", "--shutdown-delay", "2s", "--drain-timeout", "1s")
	logged := s.logged
	waitFor(t, "the sidecar to listen", logged("skills-sidecar listening"), s.detail)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shutdown delay to begin", logged("shutting down: still serving, not ready"), s.detail)
	// SIGHUPs through the rest of the delay (a bounded number): each
	// must be taken by the sidecar, none by the default action.
	var waitErr error
	for range 40 {
		if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			break // it has exited
		}
		select {
		case waitErr = <-s.exited:
			s.done = true
		case <-time.After(50 * time.Millisecond):
		}
		if s.done || logged("shutting down: draining")() {
			break
		}
	}
	if !s.done {
		select {
		case waitErr = <-s.exited:
		case <-time.After(time.Minute): // a hang guard only
			t.Fatal("the sidecar did not exit within a minute of SIGTERM")
		}
		s.done = true
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		t.Fatalf("the sidecar, sent SIGHUP while shutting down, ended with %v, want exit 0\n%s", ee.ProcessState, s.detail())
	} else if waitErr != nil {
		t.Fatal(waitErr)
	}
	if !logged("shutting down: draining")() {
		t.Errorf("exit 0 without draining\n%s", s.detail())
	}
}
