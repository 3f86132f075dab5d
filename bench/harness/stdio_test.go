package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
	"github.com/skills-sidecar/skills-sidecar/internal/deadaddr"
)

// stdioRoleEnv makes the test binary, re-run by the stdio scenario, act as
// its stdio server ("serve"), as one that prints a line that is not
// JSON-RPC and exits ("broken"), or as an HTTP hop of legacy sessions on
// the address in stdioHopEnv ("hop").
const (
	stdioRoleEnv = "SKILLSBENCH_TEST_STDIO_ROLE"
	stdioHopEnv  = "SKILLSBENCH_TEST_STDIO_HOP"
)

// echoSessions is a go-sdk streamable HTTP handler of legacy sessions with
// the echo tool.
func echoSessions() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "hop", Version: "v0"}, nil)
		addEcho(srv)
		return srv
	}, nil)
}

func TestMain(m *testing.M) {
	switch os.Getenv(stdioRoleEnv) {
	case "serve":
		if err := ServeStdioUpstream(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "hop":
		srv := &http.Server{Addr: os.Getenv(stdioHopEnv), Handler: echoSessions(), ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintln(os.Stderr, srv.ListenAndServe())
		os.Exit(1)
	case "broken":
		fmt.Println("not an MCP server")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestStdioRows runs the stdio scenario's measurements on a real stdio
// server (this binary, re-run), with a go-sdk streamable HTTP server of
// legacy sessions in the sidecar's place and an address nobody listens
// on in supergateway's: the direct and working rows report measurements
// without errors, the dead hop's rows report a failure, and a server that
// is not one fails the direct rows.
func TestStdioRows(t *testing.T) {
	hop := httptest.NewServer(echoSessions())
	defer hop.Close()
	// Held, not a port found free: another process could be given that one
	// (FreeAddr's ports are any test's or script's to take), and the
	// supergateway rows would then measure it.
	dead := deadaddr.Hold(t)
	e := &Env{opts: Options{Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Repeats: 2, MaxSamples: 5000, Short: true, Log: io.Discard}}
	targets := []Target{
		{Name: report.Direct},
		{Name: report.Sidecar, URL: hop.URL},
		{Name: Supergateway, URL: "http://" + dead + "/mcp"},
	}
	cmd := []string{os.Args[0]}

	t.Setenv(stdioRoleEnv, "serve")
	rows := e.stdioRows(t.Context(), cmd, targets)
	byKey := map[string]report.Row{}
	for _, r := range rows {
		byKey[r.Scenario+"|"+r.Variant+"|"+r.Target] = r
	}
	for _, v := range []string{"legacy c=1", "legacy c=32"} {
		for _, target := range []string{report.Direct, report.Sidecar} {
			r, ok := byKey["stdio tools/call|"+v+"|"+target]
			if !ok || !r.OK() || r.Throughput <= 0 || r.Errors != 0 || r.Samples == 0 {
				t.Errorf("%s %s: %+v, want a measurement without errors", v, target, r)
			}
			if !strings.Contains(r.Note, "over 2 rounds") {
				t.Errorf("%s %s note %q, want the spread over the 2 rounds", v, target, r.Note)
			}
		}
		if r := byKey["stdio tools/call|"+v+"|"+Supergateway]; !strings.HasPrefix(r.Status, "failed") {
			t.Errorf("%s against a dead address: status %q, want failed", v, r.Status)
		}
	}
	t.Setenv(stdioRoleEnv, "broken")
	e.opts.Repeats = 1
	off := []Target{{Name: report.Direct}, {Name: report.Sidecar, Unavailable: "off"}, {Name: Supergateway, Unavailable: "off"}}
	for _, r := range e.stdioRows(t.Context(), cmd, off) {
		if r.Target == report.Direct && !strings.HasPrefix(r.Status, "failed") {
			t.Errorf("direct %s on a server that is not one: status %q, want failed", r.Variant, r.Status)
		}
	}
}

// TestStdioHeldRows measures held sessions on a hop in a process of its
// own (this binary, re-run) and on an address nobody listens on: the first
// reports its memory per session on every round, the second fails.
func TestStdioHeldRows(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dead := deadaddr.Hold(t)
	e := &Env{opts: Options{Repeats: 2, Short: true, Log: io.Discard}}
	starts := 0
	start := func() []Target {
		starts++
		p, err := StartProcess("hop", os.Args[0], nil, []string{stdioRoleEnv + "=hop", stdioHopEnv + "=" + addr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop(time.Second) })
		if err := WaitReady(t.Context(), p, TCPProbe(addr), 5*time.Millisecond, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		return []Target{
			{Name: report.Sidecar, URL: "http://" + addr + "/mcp", Proc: p, OwnOnly: true},
			{Name: Supergateway, URL: "http://" + dead + "/mcp"},
		}
	}
	rows := e.heldRows(t.Context(), start)
	if starts != 2 {
		t.Errorf("hops started %d times, want once per round (2)", starts)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per hop: %+v", len(rows), rows)
	}
	if r := rows[0]; !r.OK() || r.Extra == nil || !strings.Contains(r.Note, "median of 2 fresh hops") {
		t.Errorf("held sessions on a working hop: %+v, want its KiB per session over 2 rounds", r)
	}
	if r := rows[1]; !strings.HasPrefix(r.Status, "failed") {
		t.Errorf("held sessions on a dead address: status %q, want failed", r.Status)
	}
}

func TestStdioVerdict(t *testing.T) {
	t.Parallel()
	direct := report.Row{Status: "ok", Throughput: 1000, P50Micros: 100}
	sg := report.Row{Status: "ok", Throughput: 500, P50Micros: 500} // +400 µs
	unavailable := report.Row{Status: "supergateway unavailable: not installed"}
	tests := map[string]struct {
		side, sg report.Row
		want     string // "" when no verdict is given
	}{
		"met":               {report.Row{Status: "ok", Throughput: 1000, P50Micros: 300}, sg, "target (≥2×, ≤0.5 of its added latency, no error) met"},
		"throughput short":  {report.Row{Status: "ok", Throughput: 999, P50Micros: 300}, sg, "missed"},
		"latency over half": {report.Row{Status: "ok", Throughput: 2000, P50Micros: 301}, sg, "missed"},
		"an error":          {report.Row{Status: "ok", Throughput: 2000, P50Micros: 150, Errors: 1}, sg, "missed"},
		"sidecar failed":    {report.Row{Status: "failed: x"}, sg, ""},
		"no supergateway":   {report.Row{Status: "ok", Throughput: 2000}, unavailable, ""},
	}
	for name, tc := range tests {
		got := stdioVerdict(tc.side, tc.sg, direct)
		switch {
		case tc.want == "" && got.Note != "":
			t.Errorf("%s: note %q, want none", name, got.Note)
		case tc.want != "" && !strings.HasSuffix(got.Note, tc.want):
			t.Errorf("%s: note %q, want it to end %q", name, got.Note, tc.want)
		}
	}
}

// A miss where direct itself is under the target says that the server bounds
// the figure; a miss where direct is over it, or a pass, does not.
func TestStdioVerdictCeiling(t *testing.T) {
	t.Parallel()
	sg := report.Row{Status: "ok", Throughput: 1000, P50Micros: 500}
	side := report.Row{Status: "ok", Throughput: 1580, P50Micros: 300}
	const bound = "missed (bounded by the server here: with no hop, direct made 1.67× supergateway's throughput)"
	if got := stdioVerdict(side, sg, report.Row{Status: "ok", Throughput: 1670, P50Micros: 100}).Note; !strings.HasSuffix(got, bound) {
		t.Errorf("direct at 1.67×: note %q, want it to end %q", got, bound)
	}
	if got := stdioVerdict(side, sg, report.Row{Status: "ok", Throughput: 2000, P50Micros: 100}).Note; !strings.HasSuffix(got, "missed") {
		t.Errorf("direct at 2×: note %q, want it to end %q", got, "missed")
	}
	met := report.Row{Status: "ok", Throughput: 2000, P50Micros: 300}
	if got := stdioVerdict(met, sg, report.Row{Status: "ok", Throughput: 1900, P50Micros: 100}).Note; !strings.HasSuffix(got, " met") {
		t.Errorf("a pass: note %q, want it to end %q", got, " met")
	}
}

func TestRoundRatios(t *testing.T) {
	t.Parallel()
	r := func(thr, p50 float64) sample { return sample{n: 1, thr: thr, p50: p50} }
	direct := []sample{r(1000, 100), r(1000, 200)}
	side := []sample{r(900, 300), r(1200, 250)}
	sg := []sample{r(300, 600), r(400, 900)}
	want := "round by round: 3.00–3.00× its throughput, added p50 +50 to +200 µs against its +500 to +700 µs"
	if got := roundRatios(direct, side, sg); got != want {
		t.Errorf("roundRatios = %q, want %q", got, want)
	}
	if got := roundRatios(direct[:1], side[:1], sg[:1]); got != "" {
		t.Errorf("roundRatios over one round = %q, want none", got)
	}
}

func TestShellJoin(t *testing.T) {
	t.Parallel()
	argv := []string{"printf", `%s|`, "a b", "it's", `$HOME "x"`}
	out, err := exec.Command("sh", "-c", shellJoin(argv)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := `a b|it's|$HOME "x"|`; string(out) != want {
		t.Errorf("sh -c %s printed %q, want %q", shellJoin(argv), out, want)
	}
}
