package main

import (
	"strings"
	"testing"
)

func TestCompareBridged(t *testing.T) {
	k := func(u, c, s, id string) Key { return Key{u, c, s, id} }
	ok, bad, warn := Result{Status: "SUCCESS"}, Result{Status: "FAILURE"}, Result{Status: "WARNING"}
	direct := map[Key]Result{
		k("up", "legacy-active", "tools-list", "a"):     ok,
		k("up", "legacy-active", "ping", "a"):           ok,
		k("up", "legacy-active", "prompts-get", "a"):    ok,
		k("up", "legacy-active", "prompts-get", "b"):    bad, // fails directly: not compared
		k("up", "legacy-active", "resources-read", "a"): warn,
		k("up", "legacy-pending", "sep-2640-x", "a"):    Result{Status: "SKIPPED"},
	}
	sidecar := map[Key]Result{
		k("up", "legacy-pending", "sep-2640-x", "a"):    bad,
		k("up", "legacy-pending", "sep-2640-y", "a"):    ok, // passes through the sidecar only
		k("up", "modern-active", "tools-list", "a"):     ok,
		k("up", "modern-active", "resources-read", "a"): bad,
		k("up", "modern-active", "resources-read", "b"): ok,
		k("up", "modern-active", "prompts-get", "a"):    bad,
		k("up", "modern-pending", "sep-2640-y", "a"):    bad,
		k("up", "modern-pending", "sep-2640-x", "a"):    ok,
	}
	rows, passed, failed := CompareBridged(direct, sidecar)
	got := []string{}
	for _, r := range rows {
		got = append(got, r.Suite+" "+r.Scenario+" "+r.LegacyBy+" "+r.Modern+" "+strings.Join(r.Failed, ","))
	}
	want := []string{
		"active ping direct not on the modern wire ",
		"active resources-read direct FAIL a",
		"active tools-list direct pass ",
		"pending sep-2640-x direct pass ",
		"pending sep-2640-y sidecar FAIL a",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if passed != 2 || failed != 2 {
		t.Errorf("passed %d failed %d, want 2 and 2", passed, failed)
	}
}

func TestPasses(t *testing.T) {
	if Passes(nil) {
		t.Error("no checks passed")
	}
	if !Passes([]Result{{Status: "SUCCESS"}, {Status: "WARNING"}, {Status: "SKIPPED"}}) {
		t.Error("warnings and skips failed a scenario")
	}
	if Passes([]Result{{Status: "SUCCESS"}, {Status: "FAILURE"}}) {
		t.Error("a failure passed")
	}
}

// TestCompareErasReverse: the reverse check reads modern-SUITE as the
// wire that must have passed and legacy-SUITE as the bridged one.
func TestCompareErasReverse(t *testing.T) {
	k := func(c, s string) Key { return Key{"up", c, s, "a"} }
	ok, bad := Result{Status: "SUCCESS"}, Result{Status: "FAILURE"}
	direct := map[Key]Result{k("modern-active", "tools-list"): ok, k("modern-active", "ping"): ok, k("legacy-active", "prompts"): ok}
	sidecar := map[Key]Result{k("legacy-active", "tools-list"): ok, k("legacy-active", "ping"): bad, k("modern-active", "prompts"): bad}
	rows, passed, failed := CompareEras(direct, sidecar, "modern-", "legacy-")
	got := []string{}
	for _, r := range rows {
		got = append(got, r.Scenario+" "+r.LegacyBy+" "+r.Modern)
	}
	want := "ping direct FAIL|tools-list direct pass"
	if strings.Join(got, "|") != want || passed != 1 || failed != 1 {
		t.Errorf("CompareEras reverse = %q, %d passed, %d failed; want %q, 1, 1", got, passed, failed, want)
	}
}
