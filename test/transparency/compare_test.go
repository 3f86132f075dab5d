package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b string
		same       bool
	}{
		{"ports", "POST http://127.0.0.1:15753/mcp refused", "POST http://127.0.0.1:40211/mcp refused", true},
		{"hosts", "Host localhost:3001 rejected", "Host 127.0.0.1:8080 rejected", true},
		{"ipv6", "connect [::1]:9000 failed", "connect 127.0.0.1:9001 failed", true},
		{"port words", "listening on port 3001", "listening on port 41002", true},
		{"uuids", "session 0f8fad5b-d9cb-469f-a165-70867728950e gone", "session 7c9e6679-7425-40de-944b-e07fc1f90ae7 gone", true},
		{"timestamps", "at 2026-12-01T09:12:34.702Z", "at 2026-12-02T10:00:00.001Z", true},
		{"different words", "tool echo missing", "tool add missing", false},
		{"different numbers", "expected 3 items", "expected 4 items", false},
		{"different codes", "error -32602", "error -32601", false},
		{"non-loopback host", "http://evil.example/mcp", "http://other.example/mcp", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			na, nb := Normalize(tt.a), Normalize(tt.b)
			if (na == nb) != tt.same {
				t.Errorf("Normalize(%q) = %q, Normalize(%q) = %q; same = %v, want %v", tt.a, na, tt.b, nb, na == nb, tt.same)
			}
		})
	}
}

// TestNormalizeMasksWhatAMaskUncovers: a mask's replacement can put a word
// boundary before text that had none; that text is masked too, so masking
// twice changes nothing (inputs the fuzz target found).
func TestNormalizeMasksWhatAMaskUncovers(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"localhost0f8fad5b-d9cb-469f-a165-70867728950e":   "<host><uuid>",
		"127.0.0.1localhost":                              "<host><host>",
		"port 1af8fad5b-d9cb-469f-a165-70867728950e gone": "port <port><uuid> gone",
		"port 1localhost:80":                              "port <port><host>",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseAllow(t *testing.T) {
	t.Parallel()
	rules, err := ParseAllow("# comment\n\n* pending sep-2640-* * SKIPPED SUCCESS the sidecar serves skills\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{{Upstream: "*", Config: "pending", Scenario: "sep-2640-*", Check: "*", Direct: "SKIPPED", Sidecar: "SUCCESS",
		Reason: "the sidecar serves skills", Line: 3}}
	if d := cmp.Diff(want, rules); d != "" {
		t.Errorf("ParseAllow (-want +got):\n%s", d)
	}
	for _, bad := range []string{
		"* pending sep-2640-* * SKIPPED SUCCESS\n", // no reason
		"* pending [ * SKIPPED SUCCESS reason\n",   // bad glob
	} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) = nil error, want one", bad)
		}
	}
}

// results builds a side from "scenario check status [message]" lines.
func results(t *testing.T, lines ...string) map[Key]Result {
	t.Helper()
	m := map[Key]Result{}
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4)
		r := Result{Status: f[2]}
		if len(f) == 4 {
			r.Message = f[3]
		}
		m[Key{"go", "active", f[0], f[1]}] = r
	}
	return m
}

func TestCompare(t *testing.T) {
	t.Parallel()
	allow, err := ParseAllow("* * sep-2640-* * SKIPPED SUCCESS the sidecar serves skills\n" +
		"* * never-matches * * * stale rule\n")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		direct, side   map[Key]Result
		passed, failed int
		rows           []string // Key.String() of the rows, with the verdict
	}{
		{
			name:   "identical",
			direct: results(t, "ping ping SUCCESS", "tools-list tools-list FAILURE tool echo missing at http://127.0.0.1:3001/mcp"),
			side:   results(t, "ping ping SUCCESS", "tools-list tools-list FAILURE tool echo missing at http://127.0.0.1:8080/mcp"),
			passed: 2,
		},
		{
			// The deliberate difference: a status the sidecar changed.
			name:   "status differs",
			direct: results(t, "ping ping SUCCESS", "dns-rebinding-protection localhost-host-rebinding-rejected SUCCESS"),
			side:   results(t, "ping ping SUCCESS", "dns-rebinding-protection localhost-host-rebinding-rejected FAILURE Host accepted"),
			passed: 1, failed: 1,
			rows: []string{"go active dns-rebinding-protection localhost-host-rebinding-rejected FAIL"},
		},
		{
			name:   "message differs beyond hosts and ports",
			direct: results(t, "tools-list tools-list FAILURE tool echo missing"),
			side:   results(t, "tools-list tools-list FAILURE tool add missing"),
			failed: 1,
			rows:   []string{"go active tools-list tools-list FAIL"},
		},
		{
			name:   "check missing through the sidecar",
			direct: results(t, "ping ping SUCCESS", "ping wire-schema-valid SUCCESS"),
			side:   results(t, "ping ping SUCCESS"),
			passed: 1, failed: 1,
			rows: []string{"go active ping wire-schema-valid FAIL"},
		},
		{
			name:   "allowed with its statuses",
			direct: results(t, "sep-2640-skills-enumeration sep-2640-skills-list-implemented SKIPPED not declared"),
			side:   results(t, "sep-2640-skills-enumeration sep-2640-skills-list-implemented SUCCESS"),
			passed: 1,
			rows:   []string{"go active sep-2640-skills-enumeration sep-2640-skills-list-implemented allowed"},
		},
		{
			// The rule names SKIPPED -> SUCCESS; a sep-2640 check that
			// regresses to FAILURE through the sidecar is not covered.
			name:   "allow rule does not cover other statuses",
			direct: results(t, "sep-2640-skills-enumeration sep-2640-skills-list-implemented SKIPPED not declared"),
			side:   results(t, "sep-2640-skills-enumeration sep-2640-skills-list-implemented FAILURE broken"),
			failed: 1,
			rows:   []string{"go active sep-2640-skills-enumeration sep-2640-skills-list-implemented FAIL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := Compare(tt.direct, tt.side, allow)
			if out.Passed != tt.passed || out.Failed != tt.failed {
				t.Errorf("Compare = %d passed, %d failed; want %d, %d", out.Passed, out.Failed, tt.passed, tt.failed)
			}
			var rows []string
			for _, r := range out.Rows {
				v := "FAIL"
				if r.Allowed != nil {
					v = "allowed"
				}
				rows = append(rows, r.Key.String()+" "+v)
			}
			if d := cmp.Diff(tt.rows, rows); d != "" {
				t.Errorf("rows (-want +got):\n%s", d)
			}
			if len(out.Unused) != 2 && tt.name == "identical" {
				t.Errorf("unused rules = %v, want the two (none matched)", out.Unused)
			}
		})
	}
}

func TestScenarioOf(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]string{
		"server-ping-2026-12-01T09-12-34-702Z":                                    "ping",
		"server-sep-2640-skills-manifest-2026-12-01T09-18-00-647Z":                "sep-2640-skills-manifest",
		"server-server-session-lifecycle-2026-12-01T09-12-38-545Z":                "server-session-lifecycle",
		"server-input-required-result-basic-elicitation-2026-12-01T09-12-37-014Z": "input-required-result-basic-elicitation",
	} {
		if got, ok := ScenarioOf(dir); !ok || got != want {
			t.Errorf("ScenarioOf(%q) = %q, %v; want %q", dir, got, ok, want)
		}
	}
	if _, ok := ScenarioOf("server-ping"); ok {
		t.Errorf("ScenarioOf(server-ping) ok, want a refusal without a timestamp")
	}
}

func TestAddChecksNumbersRepeats(t *testing.T) {
	t.Parallel()
	m := map[Key]Result{}
	AddChecks(m, "go", "active", "ping", []Check{{ID: "wire-schema-valid", Status: "SUCCESS"}, {ID: "wire-schema-valid", Status: "FAILURE"}})
	if got := m[Key{"go", "active", "ping", "wire-schema-valid#2"}].Status; got != "FAILURE" {
		t.Errorf("second wire-schema-valid = %q, want FAILURE under #2", got)
	}
}

// TestRunDeliberateDifference runs the command over a result tree written
// by hand: one check changed through the sidecar makes it exit 1 and print
// the difference; allowing it makes it exit 0.
func TestRunDeliberateDifference(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(side, status string) {
		dir := filepath.Join(root, "go-legacy", "active", side, "server-ping-2026-12-01T09-12-34-702Z")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := `[{"id":"ping","status":"SUCCESS","timestamp":"2026-12-01T09:12:34.702Z"},` +
			`{"id":"wire-schema-valid","status":"` + status + `","errorMessage":"at http://127.0.0.1:1234/mcp"}]`
		if err := os.WriteFile(filepath.Join(dir, "checks.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("direct", "SUCCESS")
	write("sidecar", "FAILURE")
	var out, errb bytes.Buffer
	if code := run([]string{root}, &out, &errb); code != 1 {
		t.Fatalf("run = %d, want 1 on a deliberate difference; output:\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "wire-schema-valid") || !strings.Contains(out.String(), "transparency: 1 passed, 1 failed") {
		t.Errorf("output lacks the difference or the count:\n%s", out.String())
	}
	allow := filepath.Join(t.TempDir(), "allow.txt")
	if err := os.WriteFile(allow, []byte("go-legacy active ping wire-schema-valid SUCCESS FAILURE a reviewed reason\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"-allow", allow, root}, &out, &errb); code != 0 {
		t.Errorf("run with the difference allowed = %d, want 0; output:\n%s", code, out.String())
	}
	if code := run([]string{t.TempDir()}, &out, &errb); code != 2 {
		t.Errorf("run over an empty tree = %d, want 2", code)
	}
}

// FuzzParseAllow: any text either fails to parse or gives rules that all
// carry a reason and valid patterns.
func FuzzParseAllow(f *testing.F) {
	f.Add("* pending sep-2640-* * SKIPPED SUCCESS reason\n")
	f.Add("# c\n\na b c d e f g h\n")
	f.Add("[ * * * * * r\n")
	f.Fuzz(func(t *testing.T, text string) {
		rules, err := ParseAllow(text)
		if err != nil {
			return
		}
		for _, r := range rules {
			if r.Reason == "" {
				t.Errorf("rule on line %d has no reason", r.Line)
			}
			_ = r.matches(Key{"a", "b", "c", "d"}, "SUCCESS", "FAILURE")
		}
	})
}

// FuzzNormalize: masking is idempotent.
func FuzzNormalize(f *testing.F) {
	f.Add("http://127.0.0.1:3001/mcp at 2026-12-01T09:12:34.702Z")
	f.Add("[::1]:80 0f8fad5b-d9cb-469f-a165-70867728950e port 9")
	f.Add("localhost0f8fad5b-d9cb-469f-a165-70867728950e")
	f.Add("port 1localhost")
	f.Fuzz(func(t *testing.T, s string) {
		if n := Normalize(s); Normalize(n) != n {
			t.Errorf("Normalize(Normalize(%q)) = %q, want %q", s, Normalize(n), n)
		}
	})
}
