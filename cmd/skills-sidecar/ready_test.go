package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

func status(u string) int {
	r, err := http.Get(u)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return r.StatusCode
}

// eventually waits (waitFor) until f returns want.
func eventually(t *testing.T, what string, want int, f func() int) {
	t.Helper()
	got := 0
	waitFor(t, fmt.Sprintf("%s to be %d", what, want), func() bool { got = f(); return got == want },
		func() string { return fmt.Sprintf("%s = %d, want %d", what, got, want) })
}

// waitFor is sidecartest.WaitFor with its hang guard (a minute); when the
// wait fails, it also logs detail() as it is then (the last value, the log
// so far), when detail is not nil.
func waitFor(t *testing.T, what string, cond func() bool, detail func() string) {
	t.Helper()
	waited := false
	defer func() {
		if !waited && detail != nil {
			t.Logf("while waiting for %s: %s", what, detail())
		}
	}()
	sidecartest.WaitFor(t, time.Minute, cond, what)
	waited = true
}

// TestReadinessFollowsUpstreamAndShutdown: /readyz is 200 with the upstream
// up, 503 when it goes away, 200 again when it returns, and 503 while the
// sidecar drains.
func TestReadinessFollowsUpstreamAndShutdown(t *testing.T) {
	t.Parallel()
	upAddr := freeAddr(t)
	releaseSlow := make(chan struct{})
	arrived := make(chan struct{}, 1)
	startUpstream := func() *http.Server {
		ln, err := net.Listen("tcp", upAddr)
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/mcp", demo.Handler(nil))
		mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(b), "tools/list") {
				// The sidecar's era probes are answered at once: only the
				// test's own request is held.
				http.Error(w, "not an MCP server", http.StatusBadRequest)
				return
			}
			arrived <- struct{}{}
			select {
			case <-releaseSlow:
			case <-r.Context().Done():
			}
		})
		s := &http.Server{Handler: mux}
		go func() { _ = s.Serve(ln) }()
		return s
	}
	up := startUpstream()

	sc := startRun(t, true, "--upstream", "http://"+upAddr+"/slow", "--drain-timeout", "5s")
	addr, maddr := sc.addr, sc.maddr
	readyz := func() int { return status("http://" + maddr + "/readyz") }
	eventually(t, "/readyz with the upstream up", 200, readyz)

	_ = up.Close()
	eventually(t, "/readyz with the upstream gone", 503, readyz)
	up = startUpstream()
	defer up.Close()
	eventually(t, "/readyz with the upstream back", 200, readyz)

	// An in-flight request the upstream holds keeps the sidecar draining.
	inflight := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			inflight <- 0
			return
		}
		resp.Body.Close()
		inflight <- resp.StatusCode
	}()
	<-arrived
	sc.cancel()
	eventually(t, "/readyz while draining", 503, readyz)
	close(releaseSlow)
	if code := <-inflight; code != http.StatusOK {
		t.Errorf("the request in flight at SIGTERM ended with status %d, want 200", code)
	}
	sc.stop(t) // it must exit 0
}

// TestHeaderLimit: a request head over --max-header-bytes gets 431.
func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	addr := startRun(t, false, "--max-header-bytes", "1024").addr
	send := func(size int) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("X-Big", strings.Repeat("a", size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	eventually(t, "a small request", 200, func() int {
		if c := send(10); c != 0 {
			return 200 // the listener is up; the status of ping does not matter here
		}
		return 0
	})
	// The limit is exact (net/http's server allows 4 KiB of slack over it):
	// a field of 1024 bytes makes the head longer than 1024, one of 700
	// leaves it under (the client's other fields take about 150).
	if code := send(1024); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 1 KiB header with --max-header-bytes 1024 = %d, want 431", code)
	}
	if code := send(700); code == http.StatusRequestHeaderFieldsTooLarge || code == 0 {
		t.Errorf("a 700-byte header with --max-header-bytes 1024 = %d, want it served", code)
	}
}

// TestShutdownDelayKeepsServing: with --shutdown-delay, a signalled sidecar
// reports not ready but still answers new connections until the delay is
// over, then drains and exits 0.
func TestShutdownDelayKeepsServing(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(demo.Handler(nil))
	defer up.Close()
	sc := startRun(t, true, "--upstream", up.URL, "--auth-gate", "none", "--shutdown-delay", "3s")
	addr, maddr := sc.addr, sc.maddr
	readyz := func() int { return status("http://" + maddr + "/readyz") }
	eventually(t, "/readyz with the upstream up", 200, readyz)
	sc.cancel()
	eventually(t, "/readyz once signalled", 503, readyz)
	// A new connection, as a client not yet told the pod is going away.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("a request during the shutdown delay: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a request during the shutdown delay got %d, want 200", resp.StatusCode)
	}
	sc.stop(t) // it must exit 0
}

// TestReadinessWaitsForEraProbe: with era-bridge auto the pod is not ready
// until the first era probe has returned (a modern request to a
// legacy-only upstream would pass through untranslated before it), and
// then is; with era-bridge off a probe that hangs does not hold readiness.
func TestReadinessWaitsForEraProbe(t *testing.T) {
	t.Parallel()
	for _, bridge := range []string{"auto", "off"} {
		t.Run(bridge, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			let := sync.OnceFunc(func() { close(release) })
			legacy := demo.Handler(nil)
			up := sidecartest.Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(strings.NewReader(string(b)))
				if strings.Contains(string(b), `"server/discover"`) {
					select { // the era probe waits until the test lets it go
					case <-release:
					case <-r.Context().Done():
						return
					}
				}
				legacy.ServeHTTP(w, r)
			}))
			maddr := startRun(t, true, "--upstream", up.URL+"/mcp", "--era-bridge", bridge).maddr
			t.Cleanup(let) // before the sidecar stops: cleanups run last first
			readyz := func() int { return status("http://" + maddr + "/readyz") }
			if bridge == "off" {
				eventually(t, "/readyz with the era probe held, era-bridge off", 200, readyz)
				return
			}
			// Ready would come within the polling interval if the probe
			// did not hold it: the sidecar itself is up (healthz).
			eventually(t, "/healthz", 200, func() int { return status("http://" + maddr + "/healthz") })
			for range 10 {
				if code := readyz(); code != http.StatusServiceUnavailable {
					t.Fatalf("/readyz = %d while the first era probe is unanswered, want 503", code)
				}
				time.Sleep(30 * time.Millisecond)
			}
			let()
			eventually(t, "/readyz once the era probe returned", 200, readyz)
		})
	}
}
