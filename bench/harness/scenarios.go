package harness

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
)

// Scenario is one of the harness's scenarios.
type Scenario struct {
	// Name selects it with -scenarios.
	Name string
	// Title describes it in the docs and the log.
	Title string
	run   func(ctx context.Context, e *Env) []report.Row
}

// Scenarios returns every scenario in the order they run.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "toolscall", Title: "1. tools/call, small arguments", run: toolsCall},
		{Name: "discover", Title: "3. initialize / server/discover", run: discover},
		{Name: "sse", Title: "2. SSE progress event latency", run: sseProgress},
		{Name: "blob", Title: "5. resources/read of a 1 MiB and a 16 MiB blob", run: blobRead},
		{Name: "skills", Title: "4. skills/list over 1,000 skills, skills/get, agents/get", run: skillsMethods},
		{Name: "idle", Title: "6. memory per idle GET stream", run: idleStreams},
		{Name: "startup", Title: "7. start-up time and idle RSS", run: startup},
		{Name: "firstpage", Title: "8. first skills/list page of new callers (upstream-served files)", run: firstPage},
		{Name: "bridge", Title: "9. era bridge: memory per session, bridged latency", run: eraBridge},
		{Name: "stdio", Title: "10. a stdio server: the sidecar against supergateway", run: stdioScenario},
	}
}

// ScenarioNames lists the names Scenarios accepts.
func ScenarioNames() []string {
	var out []string
	for _, s := range Scenarios() {
		out = append(out, s.Name)
	}
	return out
}

// Run runs the named scenarios (all when names is empty) in their fixed
// order and returns their rows.
func (e *Env) Run(ctx context.Context, names []string) []report.Row {
	var rows []report.Row
	for _, s := range Scenarios() {
		if len(names) > 0 && !slices.Contains(names, s.Name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(e.opts.Log, "== %s\n", s.Title)
		rows = append(rows, s.run(ctx, e)...)
	}
	return rows
}

// callWorker returns a worker factory that sends call to url in era,
// opening a legacy session per worker first. hdr adds headers.
func callWorker(era Era, call Call, url string, extra http.Header) func(context.Context, *http.Client) (Worker, error) {
	body := call.Body(era)
	return func(ctx context.Context, c *http.Client) (Worker, error) {
		var session string
		if era == Legacy {
			id, err := OpenSession(ctx, c, url)
			if err != nil {
				return Worker{}, err
			}
			session = id
		}
		hdr := call.Header(era, session)
		for k, v := range extra {
			hdr[k] = v
		}
		var buf bytes.Buffer
		w := Worker{Do: Timed(func(ctx context.Context) error {
			_, err := post(ctx, c, url, hdr, body, &buf)
			return err
		})}
		if session != "" {
			w.Close = func() { CloseSession(c, url, session) }
		}
		return w, nil
	}
}

var echoCall = Call{Method: "tools/call", Params: `{"name":"echo","arguments":{"message":"hello"}}`, Name: "echo"}

func toolsCall(ctx context.Context, e *Env) []report.Row {
	var rows []report.Row
	for _, era := range []Era{Legacy, Modern} {
		for _, conc := range []int{1, 32, 64} {
			rows = append(rows, e.measure(ctx, loadCase{
				scenario:    "tools/call",
				variant:     fmt.Sprintf("%s c=%d", era, conc),
				concurrency: conc,
				worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
					return callWorker(era, echoCall, t.URL, nil)
				},
			})...)
		}
	}
	return rows
}

func discover(ctx context.Context, e *Env) []report.Row {
	init := InitializeCall()
	disc := Call{Method: "server/discover"}
	stateless := http.Header{StatelessHeader: {"1"}}
	var rows []report.Row
	for _, conc := range []int{1, 32} {
		rows = append(rows, e.measure(ctx, loadCase{
			scenario: "initialize", variant: fmt.Sprintf("legacy c=%d", conc), concurrency: conc,
			worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
				// A plain legacy initialize with no session; the stateless
				// header keeps the upstream from minting a session per call.
				return callWorker(eraNoSession, init, t.URL, stateless)
			},
		})...)
		rows = append(rows, e.measure(ctx, loadCase{
			scenario: "server/discover", variant: fmt.Sprintf("modern c=%d", conc), concurrency: conc,
			worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
				return callWorker(Modern, disc, t.URL, nil)
			},
		})...)
	}
	return rows
}

// eraNoSession sends a legacy body without opening a session first; only
// callWorker and Header distinguish it from Legacy.
const eraNoSession Era = -1
