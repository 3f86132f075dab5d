package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/bench/harness"
	"github.com/skills-sidecar/skills-sidecar/bench/report"
)

func TestBroken(t *testing.T) {
	t.Parallel()
	rows := []report.Row{
		{Scenario: "a", Variant: "v", Target: report.Direct, Status: "ok"},
		{Scenario: "a", Variant: "v", Target: report.Nginx, Status: "nginx unavailable: no nginx binary"},
		{Scenario: "b", Variant: "v", Target: report.Direct, Status: "n/a: only the sidecar serves it"},
		{Scenario: "b", Variant: "v", Target: report.Sidecar, Status: "failed: -32601"},
		{Scenario: "c", Variant: "v", Target: report.Sidecar, Status: "sidecar unavailable: build failed"},
	}
	want := []string{"b v sidecar: failed: -32601", "c v sidecar: sidecar unavailable: build failed"}
	if diff := cmp.Diff(want, broken(rows)); diff != "" {
		t.Errorf("broken mismatch (-want +got):\n%s", diff)
	}
	if got := broken(rows[:3]); len(got) != 0 {
		t.Errorf("broken(healthy rows) = %q, want none", got)
	}
}

func TestScenarioList(t *testing.T) {
	t.Parallel()
	if got, err := scenarioList("toolscall,sse"); err != nil || !cmp.Equal(got, []string{"toolscall", "sse"}) {
		t.Errorf("scenarioList(toolscall,sse) = %q, %v", got, err)
	}
	if _, err := scenarioList("toolscall,nope"); err == nil {
		t.Error("scenarioList(nope) = nil error, want an error naming the unknown scenario")
	}
}

func TestNginxConfigCommand(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"nginx-config", "-prefix", "/p", "-listen", "127.0.0.1:1", "-upstream", "127.0.0.1:2"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("nginx-config exit %d, stderr %q", code, errOut.String())
	}
	if want := harness.NginxConfig("/p", "127.0.0.1:1", "127.0.0.1:2"); out.String() != want {
		t.Errorf("nginx-config printed\n%s\nwant harness.NginxConfig's\n%s", out.String(), want)
	}
	for _, args := range [][]string{
		{"nginx-config"},
		{"nginx-config", "-prefix", "/p", "-listen", "127.0.0.1:1"},
		{"nginx-config", "-prefix", "/p", "-listen", "127.0.0.1:1", "-upstream", "127.0.0.1:2", "extra"},
	} {
		out.Reset()
		if code := run(context.Background(), args, &out, io.Discard); code != 2 || out.Len() != 0 {
			t.Errorf("run(%q) = exit %d with %d bytes out, want exit 2 and nothing printed", args, code, out.Len())
		}
	}
}

// TestFirstPageUpstreamCommand: the subcommand the firstpage scenario
// starts its upstream with takes its flags, refuses a bad one, and ends
// cleanly when its context does.
func TestFirstPageUpstreamCommand(t *testing.T) {
	t.Parallel()
	var errOut strings.Builder
	if code := run(t.Context(), []string{"firstpage-upstream", "-latency", "soon"}, io.Discard, &errOut); code != 2 {
		t.Errorf("firstpage-upstream -latency soon = exit %d, want 2 (stderr %q)", code, errOut.String())
	}
	addr, err := harness.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	errOut.Reset()
	if code := run(ctx, []string{"firstpage-upstream", "-listen", addr, "-serves-some", "-latency", "2ms"}, io.Discard, &errOut); code != 0 {
		t.Errorf("firstpage-upstream after its context ended = exit %d, want 0 (stderr %q)", code, errOut.String())
	}
}
