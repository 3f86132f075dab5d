package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
)

// ProgressEvents is how many progress notifications one progress call sends.
const ProgressEvents = 50

// progressWorker calls the progress tool and records, per notification, the
// time from the upstream stamping it to this client reading its data line.
// Both ends read the same wall clock: they run on one machine.
func progressWorker(era Era, url string) func(context.Context, *http.Client) (Worker, error) {
	call := Call{
		Method: "tools/call",
		Params: `{"name":"progress","arguments":{"n":` + strconv.Itoa(ProgressEvents) + `}}`,
		Name:   "progress",
		Meta:   `"progressToken":1`,
	}
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
		w := Worker{Do: func(ctx context.Context, rec func(time.Duration)) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return fmt.Errorf("build request: %w", err)
			}
			req.Header = hdr
			resp, err := c.Do(req)
			if err != nil {
				return fmt.Errorf("post: %w", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%w: %s", errReply, resp.Status)
			}
			n := 0
			err = readProgress(resp.Body, func(d time.Duration) { n++; rec(d) })
			io.Copy(io.Discard, resp.Body)
			if err == nil && n != ProgressEvents {
				err = fmt.Errorf("%w: %d progress events, want %d", errReply, n, ProgressEvents)
			}
			return err
		}}
		if session != "" {
			w.Close = func() { CloseSession(c, url, session) }
		}
		return w, nil
	}
}

func sseProgress(ctx context.Context, e *Env) []report.Row {
	var rows []report.Row
	for _, era := range []Era{Legacy, Modern} {
		rows = append(rows, e.measure(ctx, loadCase{
			scenario: "SSE progress", variant: era.String() + " c=1", concurrency: 1,
			worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
				return progressWorker(era, t.URL)
			},
			note: func(Target) string {
				return fmt.Sprintf("events/s; latency = upstream write → client read, %d per call", ProgressEvents)
			},
		})...)
	}
	return rows
}

// blobRead measures resources/read of a 1 MiB and a 16 MiB blob through
// every hop, and through the sidecar a second time, interleaved with the
// others: the same bytes under a URI its catalog does not list, which it
// relays without hashing. That row is the floor the hashed read is held to
// (the target: at most 3x the CPU of relaying it unhashed), and its
// note gives the ratio.
func blobRead(ctx context.Context, e *Env) []report.Row {
	const relayName = "sidecar, unhashed relay" // only inside this function
	var rows []report.Row
	for _, b := range []struct {
		uri, relayURI string
		label         string
		size          int
	}{{blob1MURI, relayBlob1MURI, "1 MiB blob", 1 << 20}, {blob16MURI, relayBlob16MURI, "16 MiB blob", 16 << 20}} {
		call := Call{Method: "resources/read", Params: `{"uri":"` + b.uri + `"}`, Name: b.uri}
		relay := Call{Method: "resources/read", Params: `{"uri":"` + b.relayURI + `"}`, Name: b.relayURI}
		targets := slices.Clone(e.Targets)
		for _, t := range e.Targets {
			if t.Name == report.Sidecar {
				t.Name = relayName
				targets = append(targets, t)
			}
		}
		hashed0 := e.sidecarHashed(ctx)
		rs := e.measure(ctx, loadCase{
			scenario: "resources/read", variant: b.label + " legacy c=1", concurrency: 1, targets: targets,
			worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
				if t.Name == relayName {
					return callWorker(Legacy, relay, t.URL, nil)
				}
				return callWorker(Legacy, call, t.URL, nil)
			},
		})
		var hashedCPU, relayCPU float64
		for _, r := range rs {
			if c := r.CPUMicrosPerOp; r.OK() && c != nil {
				switch r.Target {
				case report.Sidecar:
					hashedCPU = *c
				case relayName:
					relayCPU = *c
				}
			}
		}
		for i := range rs {
			if rs[i].Target == relayName {
				rs[i].Target = report.Sidecar
				rs[i].Variant = b.label + " legacy c=1, not in the catalog: relayed unhashed"
			}
			if !rs[i].OK() {
				continue
			}
			note := fmt.Sprintf("%.0f MB/s decoded", rs[i].Throughput*float64(b.size)/1e6)
			if c := rs[i].CPUMicrosPerOp; c != nil && *c > 0 {
				// The upstream bounds the end-to-end rate on a small
				// machine; the hop's own cost is its CPU per reply.
				note += fmt.Sprintf(", %.0f MB per hop CPU-second", float64(b.size) / *c)
			}
			switch {
			case rs[i].Target == report.Sidecar && rs[i].Variant == b.label+" legacy c=1":
				// The sidecar must have hashed what it served, or the row
				// measures a plain relay. (The relay row's reads add
				// nothing to the count: their URI is in no catalog.)
				hashed := e.sidecarHashed(ctx) - hashed0
				if hashed < float64(rs[i].Samples-rs[i].Errors)*float64(b.size) {
					rs[i].Status = fmt.Sprintf("failed: the sidecar hashed %.0f bytes for %d reads of %d", hashed, rs[i].Samples, b.size)
				}
				note += fmt.Sprintf(", %.0f MB hashed by the sidecar", hashed/1e6)
				if relayCPU > 0 {
					note += fmt.Sprintf(", %.2f× the CPU of its unhashed relay", hashedCPU/relayCPU)
				}
			case rs[i].Target == report.Sidecar && hashedCPU > 0 && relayCPU > 0:
				note += fmt.Sprintf("; the hashed read costs %.2f× this relay's CPU (target: at most 3×)", hashedCPU/relayCPU)
			}
			rs[i].Note = joinNote(note, rs[i].Note)
		}
		rows = append(rows, rs...)
	}
	return rows
}

func joinNote(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// skillsMethods measures the methods the sidecar answers itself. The other
// targets have no skills, so in the skills/list variant they list the
// upstream's 1,000 filler tools instead, a listing of about the same size,
// and the row says so. A listing is one sample however many pages it takes.
// skills/get and agents/get have no stand-in.
func skillsMethods(ctx context.Context, e *Env) []report.Row {
	toolsList := Call{Method: "tools/list"}
	skillsList := Call{Method: "skills/list"}
	skillsGet := Call{Method: "skills/get", Params: `{"uri":"skill://s0000/SKILL.md"}`}
	agentsGet := Call{Method: "agents/get", Params: `{"name":"` + BenchAgent + `"}`}
	sidecarOnly := func(t Target) string {
		if t.Name != report.Sidecar {
			return "n/a: only the sidecar serves it"
		}
		return ""
	}
	var rows []report.Row
	shapes := map[string]*listingShape{}
	shape := func(t Target) *listingShape {
		if shapes[t.Name] == nil {
			shapes[t.Name] = &listingShape{}
		}
		return shapes[t.Name]
	}
	rows = append(rows, e.measure(ctx, loadCase{
		scenario: "tools/list", variant: fmt.Sprintf("%d tools modern c=1 (forwarded)", ListedTools), concurrency: 1,
		worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
			return pagedWorker(toolsList, t.URL, shape(t))
		},
	})...)
	fillNotes(rows, shapes, "")
	clear(shapes)
	list := e.measure(ctx, loadCase{
		scenario: "skills/list", variant: fmt.Sprintf("%d skills modern c=1, all pages", PluginSkills), concurrency: 1,
		worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
			if t.Name == report.Sidecar {
				return pagedWorker(skillsList, t.URL, shape(t))
			}
			return pagedWorker(toolsList, t.URL, shape(t))
		},
	})
	fillNotes(list, shapes, "stand-in: tools/list, ")
	rows = append(rows, list...)
	for _, c := range []struct {
		name string
		call Call
	}{{"skills/get", skillsGet}, {"agents/get", agentsGet}} {
		rows = append(rows, e.measure(ctx, loadCase{
			scenario: c.name, variant: "modern c=1", concurrency: 1,
			worker: func(t Target) func(context.Context, *http.Client) (Worker, error) {
				return callWorker(Modern, c.call, t.URL, nil)
			},
			skip: sidecarOnly,
		})...)
	}
	return rows
}

// fillNotes puts each measured listing's shape into its row's note, with
// prefix on the rows of targets other than the sidecar.
func fillNotes(rows []report.Row, shapes map[string]*listingShape, prefix string) {
	for i, r := range rows {
		s := shapes[r.Target]
		if s == nil || s.pages == 0 {
			continue
		}
		p := prefix
		if r.Target == report.Sidecar {
			p = ""
		}
		rows[i].Note = joinNote(p+s.String(), r.Note)
	}
}

// sidecarHashed reads the sidecar's skills_sidecar_hashed_bytes_total; 0
// when there is no sidecar or no metrics endpoint.
func (e *Env) sidecarHashed(ctx context.Context) float64 {
	for _, t := range e.Targets {
		if t.Name == report.Sidecar && t.MetricsURL != "" {
			v, _ := scrapeValue(ctx, t.MetricsURL, "skills_sidecar_hashed_bytes_total")
			return v
		}
	}
	return 0
}
