package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/childproc"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

func TestRunCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		args        []string
		env         []string
		code        int
		out, errOut string
	}{
		{name: "version", args: []string{"version"}, code: 0, out: "skills-sidecar "},
		{name: "version refuses an argument", args: []string{"version", "extra"}, code: 2, errOut: `version: unexpected argument "extra"`},
		{name: "version help", args: []string{"version", "-h"}, code: 0, out: "Usage: skills-sidecar version\n"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, errOut: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"--upstreem", "http://x"}, code: 2, errOut: "flag --upstreem: unknown flag (did you mean --upstream?)"},
		{name: "unknown flag after a good one", args: []string{"serve", "--listen", "127.0.0.1:0", "-plugin-dri=x"}, code: 2, errOut: "did you mean --plugin-dir?"},
		{name: "unknown env", env: []string{"SKILLS_SIDECAR_UPSTRAEM=http://x/mcp"}, code: 2, errOut: "(did you mean SKILLS_SIDECAR_UPSTREAM?)"},
		{name: "mistyped command", args: []string{"lnit"}, code: 2, errOut: `unknown command "lnit" (did you mean "lint"?)`},
		{name: "bad value names key", args: []string{"serve", "--drain-timeout", "forever"}, code: 2, errOut: "drain-timeout"},
		{name: "bad env names key", env: []string{"SKILLS_SIDECAR_LISTEN=nope"}, code: 2, errOut: "listen"},
		{name: "stray argument", args: []string{"serve", "extra"}, code: 2, errOut: `unexpected argument "extra"`},
		{name: "stdio command and URL", args: []string{"serve", "--upstream", "http://127.0.0.1:1/mcp", "--", "srv"}, code: 2, errOut: "upstream-command: set together with upstream"},
		{name: "stdio command not found", args: []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--annotations-file", "", "--", "no-such-stdio-server-x7"}, code: 1, errOut: `upstream-command: exec: \"no-such-stdio-server-x7\": executable file not found`},
		{name: "stdio command key not JSON", env: []string{"SKILLS_SIDECAR_UPSTREAM_COMMAND=srv --stdio"}, code: 2, errOut: "upstream-command: not a JSON array"},
		{name: "serve help", args: []string{"serve", "-h"}, code: 0, out: "-plugin-dir"},
		{name: "program help lists commands", args: []string{"--help"}, code: 0, out: "skills-sidecar lint [flags] DIR"},
		{name: "program help then flags", args: []string{"-h"}, code: 0, out: "Flags of serve"},
		{name: "help command", args: []string{"help"}, code: 0, out: "-upstream"},
		{name: "lint dispatches", args: []string{"lint"}, code: 2},
		{name: "lint the example", args: []string{"lint", "../../examples/plugin"}, code: 0, out: "2 skills"},
		{name: "verify dispatches", args: []string{"verify"}, code: 2},
		{name: "inject dispatches", args: []string{"inject"}, code: 2},
		{name: "webhook dispatches", args: []string{"webhook"}, code: 2},
		{name: "session-keys dispatches", args: []string{"session-keys"}, code: 2, errOut: "session-keys new"},
		{name: "session-keys new", args: []string{"session-keys", "new"}, code: 0, out: "="},
		{name: "program help lists session-keys", args: []string{"help"}, code: 0, out: "session-keys new|add|promote|drop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, tt.env, nil, &out, &errOut)
			if code != tt.code {
				t.Errorf("run(%q) = %d, want %d; stderr %q", tt.args, code, tt.code, errOut.String())
			}
			if !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errOut) {
				t.Errorf("run(%q): stdout %q, stderr %q; want them to contain %q and %q", tt.args, out.String(), errOut.String(), tt.out, tt.errOut)
			}
		})
	}
}

// TestUnknownFlagIsShort: a typo gets its error and suggestion, not a dump
// of every flag (the flag package's default).
func TestUnknownFlagIsShort(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--upstrem", "http://127.0.0.1:1/mcp"}, nil, nil, &out, &errOut); code != exitUsage {
		t.Fatalf("run = %d, want %d", code, exitUsage)
	}
	if lines := strings.Count(errOut.String(), "\n"); lines > 3 {
		t.Errorf("an unknown flag printed %d lines, want at most 3:\n%s", lines, errOut.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving is the binary's run serving in this process, as main runs it.
type serving struct {
	url, addr string // the MCP endpoint and its listener's address
	maddr     string // the metrics listener's address; "" when off
	out       *syncBuffer
	errOut    *syncBuffer // the log
	cancel    context.CancelFunc
	done      chan int
	once      sync.Once
	code      int
}

// startRun runs the binary's run with --listen on a free address,
// --metrics-listen on another (off unless metrics), no annotations file,
// then args, and waits until the MCP listener accepts. Every test of the
// command line that serves starts it here. When the test ends it stops
// (see stop).
func startRun(t *testing.T, metrics bool, args ...string) *serving {
	t.Helper()
	return startRunEnv(t, nil, metrics, args...)
}

// startRunEnv is startRun with environ as run's environment (a stdio
// upstream's).
func startRunEnv(t *testing.T, environ []string, metrics bool, args ...string) *serving {
	t.Helper()
	s := &serving{addr: freeAddr(t), out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan int, 1)}
	if metrics {
		s.maddr = freeAddr(t)
	}
	s.url = "http://" + s.addr + "/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		s.done <- run(ctx, append([]string{"--listen", s.addr, "--metrics-listen", s.maddr, "--annotations-file", ""}, args...),
			environ, nil, s.out, s.errOut)
	}()
	t.Cleanup(func() { s.stop(t) })
	sidecartest.WaitFor(t, time.Minute, func() bool {
		c, err := net.Dial("tcp", s.addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the sidecar to listen on "+s.addr)
	return s
}

// stop cancels run (SIGTERM in main), waits for it to drain and return,
// fails the test unless it returned 0, and returns what it returned; later
// calls return the same. The wait is a hang guard.
func (s *serving) stop(t *testing.T) int {
	t.Helper()
	s.once.Do(func() {
		s.cancel()
		select {
		case s.code = <-s.done:
		case <-time.After(time.Minute):
			t.Fatal("run did not return within a minute of cancellation")
		}
		if s.code != 0 {
			t.Errorf("run = %d, want 0; stderr %s", s.code, s.errOut.String())
		}
	})
	return s.code
}

// freeAddr is an address nothing listens on, for a server started later
// (childproc.FreeAddr: below the ephemeral range, so nothing else takes it
// meanwhile).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestServeDemoAndDrain runs the embedded default, makes one request, and
// checks that cancellation (SIGTERM in main) drains and exits 0.
func TestServeDemoAndDrain(t *testing.T) {
	t.Parallel()
	s := startRun(t, true)
	mcpURL, maddr, out, errOut := s.url, s.maddr, s.out, s.errOut
	var resp *http.Response
	var err error
	waitFor(t, "the sidecar to answer", func() bool {
		req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err = http.DefaultClient.Do(req)
		return err == nil
	}, func() string { return fmt.Sprintf("last error %v; stderr %s", err, errOut.String()) })
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "io.modelcontextprotocol/skills") {
		t.Errorf("initialize reply through the demo lacks the skills declaration: %s", body)
	}
	if !strings.Contains(out.String(), mcpURL) || !strings.Contains(out.String(), "inspector") {
		t.Errorf("stdout %q lacks the URL and the Inspector command", out.String())
	}
	// Readiness also waits for the era detector's first answered probe,
	// which runs beside the first request: polled, not read once.
	waitReady(t, "http://"+maddr+"/readyz", errOut)
	s.stop(t)
}
