package proxy_test

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// BenchmarkSealed measures the sealed-session path as scripts/bench-wrk.sh
// drives it (era "sealed"): the sidecar built as the binary builds it
// (package sidecar, its own server, era-bridge auto, a process key) in
// front of the modern-only upstream (internal/modernonly, a go-sdk
// server), called with echo in three ways. Each way is checked once
// against the go-sdk server; the timed calls are then answered at once
// with the reply it gave (its headers and bytes, the caller's id put in),
// so that the upstream's own cost (half a megabyte allocated per call)
// does not drown the hop's:
//
//   - "direct": a 2026-07-28 call to the upstream itself, the upstream's
//     and the client's own cost;
//   - "modern": the same call through the sidecar, which passes it
//     straight on (the baseline: what nginx does);
//   - "sealed": a legacy call (2025-11-25) in a session the sidecar
//     minted, its state sealed in the Mcp-Session-Id, opened and
//     translated to a 2026-07-28 call and its reply back.
//
// Client, hop and upstream share the process, so allocs/op and cpu-ns/op
// (the process's user and system CPU per call) count all three;
// hop-allocs/op, hop-ns/op and hop-cpu-ns/op are a target's figure less
// direct's in the same run (direct runs first), the hop's own share.
//
//	go test -run '^$' -bench BenchmarkSealed -benchmem -count 5 ./internal/proxy
func BenchmarkSealed(b *testing.B) {
	real := modernonly.Handler(modernonly.NewServer())
	var replay atomic.Pointer[recorded]
	up := sidecartest.Upstream(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := replay.Load()
		if rec == nil || r.Header.Get("Mcp-Method") != "tools/call" {
			real.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		id, _ := rewrite.GetKey(body, []string{"id"})
		w.Header().Set("Content-Type", rec.contentType)
		_, _ = io.WriteString(w, strings.Replace(rec.body, `"id":1,`, `"id":`+string(id)+`,`, 1))
	}))
	s := sidecartest.Start(b, up.URL+"/mcp", sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AnnotationsFile = "" // as scripts/bench-wrk.sh starts it
		c.SessionKeysFile = ""
	}})
	sidecartest.WaitFor(b, time.Minute, func() bool { e := s.Eras.Current(); return e.Known && e.Label() == "modern" },
		"the sidecar to learn the upstream's eras modern")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	sid := mintSession(b, client, s.URL)

	modern := sealedCall{url: up.URL + "/mcp", version: "2026-07-28",
		body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`}
	legacy := sealedCall{url: s.URL, version: "2025-11-25", session: sid,
		body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{}}}`}
	through := modern
	through.url = s.URL
	// The upstream's own reply to the modern call, replayed from now on.
	rec := modern.record(b, client)
	if !strings.Contains(rec.body, `"id":1,`) {
		b.Fatalf("the upstream's reply %q does not carry the id where the replay puts the caller's", rec.body)
	}
	for _, c := range []sealedCall{modern, through, legacy} {
		if got := c.do(b, client); !strings.Contains(got, `"Echo: hi"`) {
			b.Fatalf("%s through the go-sdk server: the reply %q is not echo's", c.url, got)
		}
	}
	replay.Store(&rec)
	var directAllocs, directNs, directCPU float64
	for _, c := range []struct {
		name string
		call sealedCall
	}{{"direct", modern}, {"modern", through}, {"sealed", legacy}} {
		b.Run(c.name, func(b *testing.B) {
			if got := c.call.do(b, client); !strings.Contains(got, `"Echo: hi"`) {
				b.Fatalf("%s: the reply %q is not echo's", c.name, got)
			}
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := cpuTime()
			for b.Loop() {
				c.call.do(b, client)
			}
			cpu := float64((cpuTime() - cpu0).Nanoseconds()) / float64(b.N)
			runtime.ReadMemStats(&after)
			allocs := float64(after.Mallocs-before.Mallocs) / float64(b.N)
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(cpu, "cpu-ns/op")
			if c.name == "direct" {
				directAllocs, directNs, directCPU = allocs, ns, cpu
				return
			}
			if directNs > 0 {
				b.ReportMetric(allocs-directAllocs, "hop-allocs/op")
				b.ReportMetric(ns-directNs, "hop-ns/op")
				b.ReportMetric(cpu-directCPU, "hop-cpu-ns/op")
			}
		})
	}
}

// sealedCall is one tools/call as scripts/bench-wrk.sh sends it: the era's
// MCP-Protocol-Version, Mcp-Method and Mcp-Name, and a session when given.
type sealedCall struct{ url, version, session, body string }

func (c sealedCall) do(b testing.TB, client *http.Client) string { return c.record(b, client).body }

// recorded is a reply: its Content-Type and body.
type recorded struct{ contentType, body string }

func (c sealedCall) record(b testing.TB, client *http.Client) recorded {
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", c.version)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d %s", c.url, resp.StatusCode, got)
	}
	return recorded{resp.Header.Get("Content-Type"), string(got)}
}

// mintSession initializes a legacy session through the sidecar, as
// scripts/bench-wrk.sh does (initialize, then notifications/initialized
// in the session), and returns its id.
func mintSession(b testing.TB, client *http.Client, u string) string {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		b.Fatalf("initialize through the sidecar: %d %s, no session", resp.StatusCode, got)
	}
	req, _ = http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err = client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("notifications/initialized through the sidecar: %d", resp.StatusCode)
	}
	return sid
}
