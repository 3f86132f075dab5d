package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalEndsDrain: the first SIGTERM or SIGINT starts the
// graceful drain; a second one, while a request the upstream never
// answers holds the drain open for its whole hour, ends the process at
// once with 128 plus the second signal's number (143 for SIGTERM, 130 for
// SIGINT), as docs/cli.md says: how an operator cuts a drain short, as
// with a Go server on net/http or kubectl, without reaching for SIGKILL.
// The binary runs as its own process, since it is the binary's exit that
// is judged.
func TestSecondSignalEndsDrain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		second syscall.Signal
		want   int
	}{
		{"SIGTERM twice", syscall.SIGTERM, 128 + int(syscall.SIGTERM)},
		{"SIGTERM then SIGINT", syscall.SIGINT, 128 + int(syscall.SIGINT)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			arrived, release := make(chan struct{}, 1), make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if !strings.Contains(string(b), "tools/list") {
					http.Error(w, "not an MCP server", http.StatusBadRequest)
					return
				}
				arrived <- struct{}{}
				select { // never answered while the sidecar lives
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer up.Close()
			defer close(release)

			addr := freeAddr(t)
			s := startServed(t, "serve", "--listen", addr, "--metrics-listen", "", "--annotations-file", "",
				"--log-format", "json", "--upstream", up.URL+"/mcp", "--auth-gate", "none", "--era-bridge", "off",
				"--upstream-timeout", "1h", "--drain-timeout", "1h")
			waitFor(t, "the sidecar to listen", s.logged("skills-sidecar listening"), s.detail)

			go func() {
				resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				if err == nil {
					resp.Body.Close()
				}
			}()
			<-arrived
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the drain to begin", s.logged("shutting down: draining"), s.detail)
			if err := s.cmd.Process.Signal(c.second); err != nil {
				t.Fatal(err)
			}
			var waitErr error
			select {
			case waitErr = <-s.exited:
				s.done = true
			case <-time.After(time.Minute): // a hang guard only: the drain would last an hour
				t.Fatalf("the sidecar, draining, did not exit on a second signal (%v)\n%s", c.second, s.detail())
			}
			var ee *exec.ExitError
			if !errors.As(waitErr, &ee) {
				t.Fatalf("the sidecar ended with %v on a second signal, want exit %d\n%s", waitErr, c.want, s.detail())
			}
			if got := ee.ExitCode(); got != c.want {
				t.Errorf("the sidecar ended with %v on a second signal, want exit %d\n%s", ee.ProcessState, c.want, s.detail())
			}
		})
	}
}
