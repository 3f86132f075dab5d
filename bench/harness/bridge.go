package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
	"github.com/skills-sidecar/skills-sidecar/bench/stats"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
)

// bridgeCallers are how many callers, each with its own credentials, each
// half of a bridge variant adds: the first half brings the sidecar's
// pools and heap to a steady size, the growth over the second is the
// figure. Held sessions (modern callers of a legacy-only upstream) are
// capped at 256 by the bridge, so that direction adds 120 twice.
const (
	bridgeHeldCallers   = 120
	bridgeMintedCallers = 1000
)

// eraBridge measures the era bridge in both directions, against an
// upstream of one era in the harness's own process:
//
//   - modern callers of a legacy-only go-sdk upstream: the resident memory
//     one more held legacy session costs the sidecar, and the latency of a
//     bridged 2026-07-28 tools/list against the same upstream's legacy
//     tools/list in a session, direct;
//   - legacy callers of a modern-only upstream (internal/modernonly): the
//     memory one more minted session costs, and the latency of a legacy
//     tools/list in a minted session against a 2026-07-28 tools/list,
//     direct.
func eraBridge(ctx context.Context, e *Env) []report.Row {
	row := func(variant string) report.Row {
		return report.Row{Scenario: "era bridge", Variant: variant, Target: report.Sidecar}
	}
	if e.SidecarBin == "" {
		r := row("both directions")
		r.Status = "unavailable: sidecar unavailable: " + e.SidecarErr
		return []report.Row{r}
	}
	var rows []report.Row
	for _, v := range []struct {
		label   string
		up      http.Handler
		callers int
		// caller is the bridged era, direct the upstream's own.
		caller, direct Era
	}{
		{"modern callers, legacy-only upstream (held sessions)", demo.Handler(nil), bridgeHeldCallers, Modern, Legacy},
		{"legacy callers, modern-only upstream (minted sessions)", modernonly.Handler(modernonly.NewServer()), bridgeMintedCallers, Legacy, Modern},
	} {
		r, err := e.bridgeVariant(ctx, v.up, v.callers, v.caller, v.direct)
		if err != nil {
			f := row(v.label)
			f.Status = "failed: " + clip([]byte(err.Error()), 200)
			rows = append(rows, f)
			continue
		}
		r.Variant = v.label
		rows = append(rows, r)
	}
	return rows
}

func (e *Env) bridgeVariant(ctx context.Context, h http.Handler, callers int, caller, direct Era) (report.Row, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return report.Row{}, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	upURL := "http://" + l.Addr().String() + "/mcp"
	p, addr, _, err := e.launchSidecar(ctx, []string{"--upstream", upURL, "--auth-gate", "none", "--era-bridge", "auto"}, false)
	if err != nil {
		return report.Row{}, err
	}
	defer p.Stop(time.Second)
	side := "http://" + addr + "/mcp"
	if caller == Modern {
		// Ready (an initialize passed through) is not bridging yet: the
		// sidecar carries modern requests once its era probe has answered.
		if err := WaitReady(ctx, p, DiscoverProbe(side), 5*time.Millisecond, 10*time.Second); err != nil {
			return report.Row{}, fmt.Errorf("era bridge not carrying modern requests: %w", err)
		}
	}
	client := NewClient(32)
	defer client.CloseIdleConnections()
	call := Call{Method: "tools/list"}

	// open makes n callers, each with its own bearer token, known to the
	// sidecar: a modern caller's first request opens its held session, a
	// legacy caller's initialize mints one. It returns how to call as each.
	var seq atomic.Int64
	open := func(n int) ([]http.Header, error) {
		hs := make([]http.Header, n)
		err := parallel(16, n, func(i int) error {
			token := fmt.Sprintf("Bearer bridge-%d-%s", seq.Add(1), randomToken())
			if caller == Modern {
				hs[i] = call.Header(Modern, "")
				hs[i].Set("Authorization", token)
				var buf bytes.Buffer
				_, err := post(ctx, client, side, hs[i], call.Body(Modern), &buf)
				return err
			}
			init := InitializeCall().Header(Legacy, "")
			init.Set("Authorization", token)
			var buf bytes.Buffer
			resp, err := post(ctx, client, side, init, InitializeCall().Body(Legacy), &buf)
			if err != nil {
				return err
			}
			hs[i] = call.Header(Legacy, resp.Header.Get("Mcp-Session-Id"))
			hs[i].Set("Authorization", token)
			return nil
		})
		return hs, err
	}
	first, err := open(callers)
	if err != nil {
		return report.Row{}, fmt.Errorf("first %d callers: %w", callers, err)
	}
	time.Sleep(200 * time.Millisecond)
	u0, err := ReadUsage(p.PID())
	if err != nil {
		return report.Row{}, err
	}
	if _, err := open(callers); err != nil {
		return report.Row{}, fmt.Errorf("next %d callers: %w", callers, err)
	}
	time.Sleep(200 * time.Millisecond)
	u1, err := ReadUsage(p.PID())
	if err != nil {
		return report.Row{}, err
	}
	kib := float64(u1.RSSKiB-u0.RSSKiB) / float64(callers)

	// Latency: one warm caller, sequentially, bridged and direct.
	n := 400
	if e.opts.Short {
		n = 100
	}
	timed := func(url string, hdr http.Header, body []byte) (stats.Summary, error) {
		var ds []time.Duration
		var buf bytes.Buffer
		for range n {
			t0 := time.Now()
			if _, err := post(ctx, client, url, hdr, body, &buf); err != nil {
				return stats.Summary{}, err
			}
			ds = append(ds, time.Since(t0))
		}
		return stats.Summarize(ds), nil
	}
	bridged, err := timed(side, first[0], call.Body(caller))
	if err != nil {
		return report.Row{}, fmt.Errorf("bridged tools/list: %w", err)
	}
	dh := call.Header(direct, "")
	if direct == Legacy {
		sid, err := OpenSession(ctx, client, upURL)
		if err != nil {
			return report.Row{}, fmt.Errorf("direct session: %w", err)
		}
		defer CloseSession(client, upURL, sid)
		dh = call.Header(Legacy, sid)
	}
	straight, err := timed(upURL, dh, call.Body(direct))
	if err != nil {
		return report.Row{}, fmt.Errorf("direct tools/list: %w", err)
	}
	return report.Row{
		Scenario: "era bridge", Target: report.Sidecar, Status: "ok",
		P50Micros: micros(bridged.P50), P99Micros: micros(bridged.P99), Samples: int64(bridged.N), RSSKiB: u1.RSSKiB,
		Note: fmt.Sprintf("%.1f KiB RSS per session (over %d more, %d held before); bridged tools/list p50 %.0f µs against %.0f µs direct on the upstream's own era (%+.0f µs: the hop and the translation)",
			kib, callers, callers, micros(bridged.P50), micros(straight.P50), micros(bridged.P50)-micros(straight.P50)),
		Extra: map[string]float64{"kib_per_session": kib, "direct_p50_us": micros(straight.P50)},
	}, nil
}
