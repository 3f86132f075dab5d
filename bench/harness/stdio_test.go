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
)

// stdioRoleEnv makes the test binary, re-run by the stdio scenario, act as
// its stdio server ("serve") or as one that prints a line that is not
// JSON-RPC and exits ("broken").
const stdioRoleEnv = "SKILLSBENCH_TEST_STDIO_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(stdioRoleEnv) {
	case "serve":
		if err := ServeStdioUpstream(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
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
	hop := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "hop", Version: "v0"}, nil)
		addEcho(srv)
		return srv
	}, nil))
	defer hop.Close()
	dead, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
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
	held := 0
	for _, r := range rows {
		if r.Scenario == "stdio held sessions" {
			held++
			// Neither hop has a process of its own to read here.
			if !strings.HasPrefix(r.Status, "failed") {
				t.Errorf("held sessions on %s without a hop process: status %q, want failed", r.Target, r.Status)
			}
		}
	}
	if held != 2 {
		t.Errorf("%d held-session rows, want one per hop (2)", held)
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
