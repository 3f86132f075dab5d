//go:build soak

// The soak stage of scripts/test.sh runs this test (go test -tags soak),
// and only it: it builds and runs both binaries for about 15 s, a whole
// soak in small, which the unit stage's go test ./... leaves out.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestSoakShort runs the whole soak for five seconds with four workers:
// both binaries built and started, two swaps, one upstream restart, and
// every check passing. It keeps replaced plugin revisions on disk: removing
// them at once, as the kubelet does, can race a catalog load that is still
// reading the old one (see docs/soak.md), and this test is about the soak's
// own machinery; `make soak` runs the kubelet's way.
func TestSoakShort(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "soak.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"-duration", "5s", "-warmup", "1s", "-workers", "4", "-reloads", "2",
		"-stream-hold", "1s", "-settle", "10s", "-keep-old-revisions", "-json", report}, &stdout, &stderr)
	out := stdout.String()
	t.Logf("soak output:\n%s\n%s", out, stderr.String())
	if code != 0 {
		t.Fatalf("run = %d, want 0", code)
	}
	if !regexp.MustCompile(`soak: \d+ passed, 0 failed\n$`).MatchString(out) {
		t.Errorf("output does not end with the summary line")
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Verdict string `json:"verdict"`
		Clients struct {
			Total    int                       `json:"total"`
			Requests map[string]map[string]int `json:"requests"`
		} `json:"clients"`
		Swaps    int `json:"catalog_swaps"`
		Restarts int `json:"upstream_restarts"`
		Peak     struct {
			Goroutines int `json:"goroutines"`
		} `json:"peak"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != "pass" || r.Clients.Total == 0 || r.Swaps != 2 || r.Restarts != 1 || r.Peak.Goroutines == 0 {
		t.Errorf("report = %+v, want a pass with requests, 2 swaps, 1 restart and a peak", r)
	}
	for _, m := range []string{"tools/call", "skills/list", "resources/read", "GET stream"} {
		if r.Clients.Requests[m]["results"] == 0 {
			t.Errorf("no %s results in the JSON report", m)
		}
	}
}
