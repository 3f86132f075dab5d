package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
	"github.com/skills-sidecar/skills-sidecar/bench/stats"
)

// IdleStreams is how many standalone GET streams scenario 6 holds open.
const IdleStreams = 1000

// idleStreams measures the resident memory one more idle legacy GET stream
// costs the hop process: 2×IdleStreams sessions are opened, then a GET
// stream on each of the first IdleStreams, and only then is RSS read,
// before and after a stream on each of the other IdleStreams. The first
// batch takes up the heap the sessions left free and brings pools to their
// steady size, which would otherwise make the growth (and the figure) look
// smaller than a stream's real cost.
func idleStreams(ctx context.Context, e *Env) []report.Row {
	fmt.Fprintf(e.opts.Log, "measure idle GET streams x%d\n", IdleStreams)
	type rep struct{ perStream, p50, p99, rss float64 }
	per := make([][]rep, len(e.Targets))
	firstErr := make([]error, len(e.Targets))
	for range e.opts.Repeats {
		for i, t := range e.Targets {
			if t.Unavailable != "" {
				continue
			}
			r, err := holdStreams(ctx, t, IdleStreams)
			if err != nil {
				if firstErr[i] == nil {
					firstErr[i] = err
				}
				continue
			}
			per[i] = append(per[i], rep{r.kibPerStream, micros(r.open.P50), micros(r.open.P99), float64(r.rssAfter)})
		}
	}
	var rows []report.Row
	for i, t := range e.Targets {
		row := report.Row{Scenario: "idle GET streams", Variant: fmt.Sprintf("%d more on %d held", IdleStreams, IdleStreams), Target: t.Name}
		var ps, p50, p99, rss []float64
		for _, r := range per[i] {
			ps, p50, p99, rss = append(ps, r.perStream), append(p50, r.p50), append(p99, r.p99), append(rss, r.rss)
		}
		switch {
		case t.Unavailable != "":
			row.Status = t.Unavailable
		case len(ps) == 0:
			row.Status = "failed: " + clip([]byte(fmt.Sprint(firstErr[i])), 160)
		default:
			row.Status = "ok"
			row.P50Micros, row.P99Micros = stats.Median(p50), stats.Median(p99)
			row.RSSKiB = int64(stats.Median(rss))
			row.Samples = int64(len(ps) * IdleStreams)
			kib := stats.Median(ps)
			row.Extra = map[string]float64{"kib_per_stream": kib}
			row.Note = fmt.Sprintf("%.1f KiB RSS per idle stream; p50/p99 = time to open one", kib)
		}
		rows = append(rows, row)
	}
	return rows
}

type holdResult struct {
	kibPerStream float64
	open         stats.Summary
	rssAfter     int64
}

// holdStreams opens 2n sessions on t and a GET stream on each, and measures
// the hop's RSS growth over the second n streams. Everything it opens it
// closes before returning.
func holdStreams(ctx context.Context, t Target, n int) (holdResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	setup := NewClient(32)
	defer setup.CloseIdleConnections()
	ids := make([]string, 2*n)
	if err := parallel(32, len(ids), func(i int) error {
		id, err := OpenSession(ctx, setup, t.URL)
		ids[i] = id
		return err
	}); err != nil {
		closeAll(setup, t.URL, ids)
		return holdResult{}, err
	}
	defer closeAll(setup, t.URL, ids)

	streams := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true}}
	defer streams.CloseIdleConnections()
	bodies := make([]io.ReadCloser, len(ids))
	defer func() {
		for _, b := range bodies {
			if b != nil {
				b.Close()
			}
		}
	}()
	opens := make([]time.Duration, len(ids))
	open := func(i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
		if err != nil {
			return fmt.Errorf("build GET: %w", err)
		}
		req.Header = Call{}.Header(Legacy, ids[i])
		req.Header.Set("Accept", "text/event-stream")
		t0 := time.Now()
		resp, err := streams.Do(req)
		if err != nil {
			return fmt.Errorf("open GET stream: %w", err)
		}
		opens[i] = time.Since(t0)
		bodies[i] = resp.Body
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("open GET stream: %w: %s", errReply, resp.Status)
		}
		return nil
	}
	if err := parallel(32, n, open); err != nil {
		return holdResult{}, err
	}
	time.Sleep(500 * time.Millisecond)
	before, err := ReadUsage(t.Proc.PID())
	if err != nil {
		return holdResult{}, err
	}
	if err := parallel(32, n, func(i int) error { return open(n + i) }); err != nil {
		return holdResult{}, err
	}
	time.Sleep(500 * time.Millisecond)
	after, err := ReadUsage(t.Proc.PID())
	if err != nil {
		return holdResult{}, err
	}
	return holdResult{
		kibPerStream: float64(after.RSSKiB-before.RSSKiB) / float64(n),
		open:         stats.Summarize(opens),
		rssAfter:     after.RSSKiB,
	}, nil
}

func closeAll(c *http.Client, url string, ids []string) {
	_ = parallel(32, len(ids), func(i int) error {
		if ids[i] != "" {
			CloseSession(c, url, ids[i])
		}
		return nil
	})
}

// parallel runs fn(0..n-1) on at most workers goroutines and returns the
// first error; after an error no new calls start.
func parallel(workers, n int, fn func(i int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil || i >= n
				mu.Unlock()
				if stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}
