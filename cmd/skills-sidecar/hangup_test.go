package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestHangupReloads: SIGHUP makes the sidecar reload its plugin folder at
// once (trigger "manual"), the promise catalog.Watcher.Reload's comment
// makes. The folder does not change, so no event or poll would reload it.
func TestHangupReloads(t *testing.T) {
	// Not parallel: the signal goes to the whole test process. The test's
	// own registration keeps the process alive whether or not the
	// sidecar's handler is registered yet.
	keep := make(chan os.Signal, 1)
	signal.Notify(keep, syscall.SIGHUP)
	defer signal.Stop(keep)
	root := filepath.Join(t.TempDir(), "plugin")
	sidecartest.WriteTree(t, root, map[string]string{"skills/notes/SKILL.md": "---\nname: notes\ndescription: Notes.\n---\n# Notes\n"})
	errOut := startRun(t, true, "--upstream", "http://127.0.0.1:1/mcp", "--auth-gate", "none", "--plugin-dir", root,
		"--poll-interval", "1h", "--log-format", "json").errOut
	manual := func() bool { return strings.Contains(errOut.String(), `"msg":"plugin loaded","trigger":"manual"`) }
	waitLog(t, "the initial load", errOut, func(loaded, _ int, _ float64) bool { return loaded >= 1 })
	if manual() {
		t.Fatal("a manual reload before any SIGHUP")
	}
	// The sidecar registers its handler just after the initial load, so
	// the signal is repeated until a reload shows.
	waitFor(t, "a manual reload after SIGHUPs", func() bool {
		if manual() {
			return true
		}
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		return false
	}, func() string { return "log:\n" + errOut.String() })
}
