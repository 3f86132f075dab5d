package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/stdioserver"
)

// TestServeStdioUpstream runs serve -- CMD with the stdio test server (in
// a mode that starts a grandchild and ignores SIGTERM), waits for /readyz,
// makes a session, and checks that cancellation (SIGTERM in main) exits 0
// and leaves no process behind: neither the session's process nor what it
// started.
func TestServeStdioUpstream(t *testing.T) {
	t.Parallel()
	argv, env, err := stdioserver.Command("child,stubborn")
	if err != nil {
		t.Fatal(err)
	}
	sv := serveStdio(t, argv, env)
	addr, maddr, out, errOut := sv.addr, sv.maddr, sv.out, sv.errOut
	waitReady(t, "http://"+maddr+"/readyz", errOut)
	mcpURL := "http://" + addr + "/mcp"
	resp, body := post(t, mcpURL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" || !strings.Contains(body, "io.modelcontextprotocol/skills") {
		t.Fatalf("initialize through the sidecar = %d %s (session %q), want the skills declaration", resp.StatusCode, body, sid)
	}
	_, body = post(t, mcpURL, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pid"}}`)
	m := regexp.MustCompile(`"text":"(\d+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("pid call = %s", body)
	}
	pid, _ := strconv.Atoi(m[1])
	if !strings.Contains(out.String(), mcpURL) || !strings.Contains(out.String(), "(stdio)") {
		t.Errorf("stdout %q lacks the URL and the stdio upstream", out.String())
	}
	if code := sv.stop(t); code != 0 {
		t.Errorf("run after cancel = %d, want 0; stderr %s", code, errOut.String())
	}
	// Every process started with the sidecar's pid as parent or in a
	// group it made is gone: the session's, the probe's, their grandchildren.
	grandchildren := regexp.MustCompile(`grandchild (\d+)`).FindAllStringSubmatch(errOut.String(), -1)
	if len(grandchildren) == 0 {
		t.Fatalf("no grandchild logged from the processes' stderr: %s", errOut.String())
	}
	pids := []int{pid}
	for _, g := range grandchildren {
		n, _ := strconv.Atoi(g[1])
		pids = append(pids, n)
	}
	for _, p := range pids {
		if processAlive(p) {
			t.Errorf("process %d outlived the sidecar", p)
		}
	}
}

// serveStdio runs serve (startRunEnv, metrics on) with argv as its stdio
// upstream and env as its environment.
func serveStdio(t *testing.T, argv, env []string) *serving {
	t.Helper()
	return startRunEnv(t, env, true, append([]string{"--drain-timeout", "2s", "--"}, argv...)...)
}

// waitReady waits (waitFor) until u, a /readyz, answers 200.
func waitReady(t *testing.T, u string, errOut *syncBuffer) {
	t.Helper()
	last := ""
	waitFor(t, u+" to be 200", func() bool {
		r, err := http.Get(u)
		if err != nil {
			last = err.Error()
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		last = fmt.Sprintf("HTTP %d %s", r.StatusCode, b)
		return r.StatusCode == http.StatusOK
	}, func() string { return "last " + last + "; stderr " + errOut.String() })
}

func post(t *testing.T, u, sid, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// processAlive reports whether pid is a process that has not exited (a
// zombie has).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	return processState(b) != "Z"
}

// processState is the state field of a /proc/PID/stat line.
func processState(stat []byte) string {
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestStdioNotReadyUntilHandshake: with a stdio server that never answers,
// /readyz stays 503 and says why.
func TestStdioNotReadyUntilHandshake(t *testing.T) {
	t.Parallel()
	argv, env, err := stdioserver.Command("mute")
	if err != nil {
		t.Fatal(err)
	}
	sv := serveStdio(t, argv, env)
	maddr, errOut := sv.maddr, sv.errOut
	seen := 0
	waitFor(t, "/readyz to answer five times", func() bool {
		r, err := http.Get("http://" + maddr + "/readyz")
		if err != nil {
			return false // not listening yet
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "handshake") {
			t.Fatalf("/readyz in front of a mute server = %d %s, want 503 naming the handshake", r.StatusCode, b)
		}
		seen++
		return seen >= 5
	}, func() string { return fmt.Sprintf("/readyz answered %d times; stderr %s", seen, errOut.String()) })
}
