package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func res(goroutines, fds, upstream, streams int) Resources {
	return Resources{Sample: Sample{Goroutines: goroutines, FDs: fds, ActiveStreams: streams}, Sockets: Sockets{Upstream: upstream}}
}

func TestLeakChecks(t *testing.T) {
	t.Parallel()
	base := res(40, 25, 12, 0)
	tol := Tolerance{Goroutines: 10, FDs: 5}
	// want lists the pass/fail of: goroutines, fds, pool, streams.
	tests := map[string]struct {
		after Resources
		want  []bool
	}{
		"back to baseline":   {res(40, 25, 12, 0), []bool{true, true, true, true}},
		"within tolerance":   {res(50, 30, 12, 0), []bool{true, true, true, true}},
		"pool shrank":        {res(20, 15, 2, 0), []bool{true, true, true, true}},
		"pool grew, no leak": {res(40, 33, 20, 0), []bool{true, true, true, true}},
		"goroutine leak":     {res(51, 25, 12, 0), []bool{false, true, true, true}},
		"fd leak":            {res(40, 31, 12, 0), []bool{true, false, true, true}},
		"leaked stream":      {res(43, 27, 12, 1), []bool{true, true, true, false}},
		"connection leak":    {res(40, 25+88, 100, 0), []bool{true, true, false, true}},
		"everything leaks":   {res(400, 300, 100, 3), []bool{false, false, false, false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checks := LeakChecks(base, tc.after, tol, 36)
			var got []bool
			for _, c := range checks {
				got = append(got, c.Pass)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LeakChecks(%+v) pass (-want +got):\n%s\n%+v", tc.after, diff, checks)
			}
		})
	}
}

func TestOutside(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	windows := []Window{{From: at(10), To: at(16)}}
	events := []ErrorEvent{
		{Method: "tools/call", Kind: "a", Start: at(9), End: at(10.5)},  // overlaps the start
		{Method: "tools/call", Kind: "b", Start: at(12), End: at(12.1)}, // inside
		{Method: "tools/call", Kind: "c", Start: at(15.9), End: at(30)}, // overlaps the end
		{Method: "tools/call", Kind: "d", Start: at(3), End: at(3.1)},   // before
		{Method: "skills/list", Kind: "e", Start: at(17), End: at(17)},  // after
		{Method: "skills/list", Kind: "e", Start: at(40), End: at(41)},  // after
	}
	want := map[string]int{"tools/call: d": 1, "skills/list: e": 2}
	if diff := cmp.Diff(want, Outside(events, windows)); diff != "" {
		t.Errorf("Outside (-want +got):\n%s", diff)
	}
	if got := Outside(events, nil); len(got) != 5 {
		t.Errorf("Outside(no windows) = %v, want all five kinds", got)
	}
}

// TestClientChecksCatchNoReply: one request that ended without a result or
// an error fails the run, as do a hung request and wrong content.
func TestClientChecksCatchNoReply(t *testing.T) {
	t.Parallel()
	good := ClientSummary{Requests: map[string]MethodStats{
		"tools/call": {Results: 1}, "skills/list": {Results: 1}, "resources/read": {Results: 1}, "GET stream": {Results: 1},
	}, Walks: WalkStats{Complete: 1}, Sessions: SessionStats{Reinitialized: 1}}
	ch := chaosLog{restarts: 1}
	if failed := failedNames(clientChecks(good, ClientSummary{}, nil, ch, 10)); len(failed) != 0 {
		t.Fatalf("clientChecks(good) failed %v, want none", failed)
	}
	tests := map[string]struct {
		mutate func(c, warm *ClientSummary, outside map[string]int)
		want   []string
	}{
		"no reply": {func(c, _ *ClientSummary, _ map[string]int) { c.NoReply = 1 },
			[]string{"every request ended with a result or an error"}},
		"hung in warm-up": {func(_, w *ClientSummary, _ map[string]int) { w.Hung = 1 },
			[]string{"no request hung past the client timeout"}},
		"wrong echo": {func(c, _ *ClientSummary, _ map[string]int) { c.WrongContent = 2 },
			[]string{"results carried what was asked for"}},
		"no streams": {func(c, _ *ClientSummary, _ map[string]int) { c.Requests["GET stream"] = MethodStats{} },
			[]string{"every kind of request was served"}},
		"split walk": {func(c, _ *ClientSummary, _ map[string]int) { c.Walks.Inconsistent = 1 },
			[]string{"skills/list walks saw every skill exactly once"}},
		"error during a swap": {func(_, _ *ClientSummary, o map[string]int) { o["resources/read: http 200, code -32002, reason -"] = 1 },
			[]string{"no errors outside the upstream restart window"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := good
			c.Requests = map[string]MethodStats{}
			for k, v := range good.Requests {
				c.Requests[k] = v
			}
			var warm ClientSummary
			outside := map[string]int{}
			tc.mutate(&c, &warm, outside)
			if diff := cmp.Diff(tc.want, failedNames(clientChecks(c, warm, outside, ch, 10))); diff != "" {
				t.Errorf("failed checks (-want +got):\n%s", diff)
			}
		})
	}
	if failed := failedNames(clientChecks(good, ClientSummary{}, nil, ch, 0)); len(failed) != 1 {
		t.Errorf("clientChecks with no result after the restart failed %v, want the restart check", failed)
	}
}

func failedNames(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if !c.Pass {
			out = append(out, c.Name)
		}
	}
	return out
}

func TestCatalogChecks(t *testing.T) {
	t.Parallel()
	p := &Plugin{Skills: 2, rev: 3}
	current := map[string]string{"skill://a/SKILL.md": "A " + RevTag(3), "skill://b/SKILL.md": "B " + RevTag(3)}
	stale := map[string]string{"skill://a/SKILL.md": "A " + RevTag(3), "skill://b/SKILL.md": "B " + RevTag(2)}
	tests := map[string]struct {
		rep   Report
		final map[string]string
		want  []string
	}{
		"all reloaded":   {Report{ReloadsOK: 4}, current, nil},
		"missed reload":  {Report{ReloadsOK: 2}, current, []string{"every swap of ..data was reloaded"}},
		"failed reload":  {Report{ReloadsOK: 4, ReloadsFailed: 1}, current, []string{"every swap of ..data was reloaded"}},
		"stale skill":    {Report{ReloadsOK: 4}, stale, []string{"the last revision is served after the load"}},
		"missing skills": {Report{ReloadsOK: 4}, map[string]string{}, []string{"the last revision is served after the load"}},
		"partial load":   {Report{ReloadsOK: 4, PartialLoads: 1}, current, []string{"every catalog load published the whole plugin"}},
		"mixed page": {Report{ReloadsOK: 4, Clients: ClientSummary{Walks: WalkStats{MixedPages: 1}}}, current,
			[]string{"every catalog load published the whole plugin"}},
	}
	for name, tc := range tests {
		got := failedNames(catalogChecks(&tc.rep, chaosLog{swaps: 3}, tc.final, nil, p))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: failed checks (-want +got):\n%s", name, diff)
		}
	}
}

func TestReportPrint(t *testing.T) {
	t.Parallel()
	r := &Report{Duration: Seconds(time.Minute), Checks: []Check{{Name: "a", Pass: true}, {Name: "b"}, {Name: "c", Pass: true}},
		Clients: ClientSummary{Errors: map[string]int{"tools/call: http 502, code -32603, reason upstream_unreachable": 3}}}
	r.Finish()
	if r.Passed != 2 || r.Failed != 1 || r.Verdict != "fail" {
		t.Errorf("Finish = %d passed, %d failed, %q; want 2, 1, fail", r.Passed, r.Failed, r.Verdict)
	}
	var b bytes.Buffer
	r.Print(&b)
	out := b.String()
	if !strings.HasSuffix(out, "soak: 2 passed, 1 failed\n") {
		t.Errorf("Print does not end with the summary line:\n%s", out)
	}
	for _, want := range []string{"FAIL b", "3  tools/call: http 502, code -32603, reason upstream_unreachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("Print lacks %q:\n%s", want, out)
		}
	}
}

func TestSidecarLog(t *testing.T) {
	t.Parallel()
	var l sidecarLog
	for _, line := range []string{
		`{"level":"info","msg":"plugin loaded","trigger":"initial","skills":50,"agents":0,"problems":0}`,
		`{"level":"info","msg":"plugin loaded","trigger":"event","skills":47,"agents":0,"problems":0}`,
		`{"level":"info","msg":"plugin loaded","trigger":"event","skills":50,"agents":0,"problems":2}`,
		`{"level":"warn","msg":"plugin item skipped","path":"skills/soak-003/SKILL.md","kind":"read","reason":"gone"}`,
		`{"level":"warn","msg":"request failed","method":"tools/call"}`,
		`{"level":"warn","msg":"request failed","method":"tools/call"}`,
		`not json`,
		`{"level":"error","msg":"plugin reload failed: keeping the last good catalog"}`,
	} {
		l.record(line, 50)
	}
	byMsg, loads, partial, samples := l.summary()
	want := map[string]int{"warn: plugin item skipped": 1, "warn: request failed": 2, "error: plugin reload failed: keeping the last good catalog": 1}
	if diff := cmp.Diff(want, byMsg); diff != "" {
		t.Errorf("by message (-want +got):\n%s", diff)
	}
	if loads != 3 || partial != 2 || len(samples) != 1 || samples[0] != "skills/soak-003/SKILL.md: gone" {
		t.Errorf("loads %d, partial %d, samples %q; want 3, 2 and the skipped item", loads, partial, samples)
	}
}

func TestRevOf(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Soak skill soak-001 " + RevTag(12) + ". Use it.": "(rev 12)",
		"no tag": "",
		"(rev 3": "",
	}
	for in, want := range tests {
		if got := revOf(in); got != want {
			t.Errorf("revOf(%q) = %q, want %q", in, got, want)
		}
	}
}
