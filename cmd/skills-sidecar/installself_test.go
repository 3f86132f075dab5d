package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallSelf pins what the injector's init container relies on: the
// running binary lands in DIR/skills-sidecar, byte for byte, mode 0755,
// and a second run (a restarted init container) replaces it.
func TestInstallSelf(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for range 2 {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"install-self", dir}, nil, nil, &stdout, &stderr); code != exitOK {
			t.Fatalf("install-self = %d, want %d; stderr: %s", code, exitOK, stderr.String())
		}
	}
	dst := filepath.Join(dir, installSelfName)
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode = %v, want 0755", fi.Mode().Perm())
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the copy (%d bytes) differs from the running binary (%d bytes)", len(got), len(want))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("DIR holds %d entries, want only %s (no temporary file left)", len(entries), installSelfName)
	}
}

func TestInstallSelfFails(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args   []string
		code   int
		errOut string
	}{
		"no folder":      {nil, exitUsage, "Usage: skills-sidecar install-self DIR"},
		"two folders":    {[]string{"a", "b"}, exitUsage, "Usage"},
		"missing folder": {[]string{filepath.Join(t.TempDir(), "absent")}, exitFail, "no such file or directory"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"install-self"}, tc.args...), nil, nil, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.errOut) {
				t.Errorf("install-self %q = %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.errOut)
			}
		})
	}
}
