package staticbin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestCheck builds a tiny program twice: with CGO_ENABLED=0 it must pass,
// and linked against the C library (when a C toolchain is present) it must
// be caught.
func TestCheck(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds binaries; linux only")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"os/user\"\n\nfunc main() { _, _ = user.Current() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(cgo, out string) error {
		cmd := exec.Command("go", "build", "-o", out, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=-mod=mod", "GO111MODULE=off")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("go build (CGO_ENABLED=%s): %v\n%s", cgo, err, b)
		}
		return err
	}
	static := filepath.Join(dir, "static")
	if err := build("0", static); err != nil {
		t.Fatal(err)
	}
	if err := Check(static); err != nil {
		t.Errorf("Check(static build) = %v, want nil", err)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C toolchain for the dynamic case")
	}
	dynamic := filepath.Join(dir, "dynamic")
	if err := build("1", dynamic); err != nil {
		t.Skip("cgo build failed; cannot make a dynamic binary here")
	}
	if err := Check(dynamic); !errors.Is(err, ErrDynamic) {
		t.Errorf("Check(cgo build) = %v, want ErrDynamic", err)
	}
	if err := Check(src); err == nil {
		t.Error("Check(a Go source file) = nil, want an ELF error")
	}
}
