package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
