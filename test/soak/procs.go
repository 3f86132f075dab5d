package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/childproc"
)

// errNotReady is returned when a child does not become ready in time.
var errNotReady = errors.New("soak: not ready")

// Build compiles the sidecar and the demo upstream from the module at
// moduleDir into dir, with the race detector when race is set, and returns
// their paths.
func Build(ctx context.Context, moduleDir, dir string, race bool) (sidecar, upstream string, err error) {
	sidecar = filepath.Join(dir, "skills-sidecar")
	upstream = filepath.Join(dir, "demo-upstream")
	for bin, pkg := range map[string]string{sidecar: "./cmd/skills-sidecar", upstream: "./cmd/demo-upstream"} {
		args := []string{"build", "-o", bin}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
		cmd.Dir = moduleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %w: %s", pkg, err, bytes.TrimSpace(out))
		}
	}
	return sidecar, upstream, nil
}

// ModuleDir returns the root of the module the current directory is in.
func ModuleDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module: run the soak from the repository")
	}
	return filepath.Dir(mod), nil
}

// Process is a child the soak started; it is stopped by its pid only.
type Process = childproc.Process

// Start runs bin with args in a process group of its own (so a terminal's
// SIGINT reaches only the soak, which then stops its children in order).
// Each line of its output is passed to onLine when it is not nil. The
// caller must call Stop or Kill.
func Start(name, bin string, args []string, onLine func(string)) (*Process, error) {
	return childproc.Start(name, bin, args, nil, onLine)
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr() (string, error) { return childproc.FreeAddr() }

// WaitFor calls probe every 50ms until it succeeds, p exits, ctx ends or
// timeout passes.
func WaitFor(ctx context.Context, p *Process, timeout time.Duration, probe func(context.Context) error) error {
	return childproc.WaitReady(ctx, p, probe, 50*time.Millisecond, timeout)
}

func lastLines(s string, n int) string { return childproc.LastLines(s, n) }
