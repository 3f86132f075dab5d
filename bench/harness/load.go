package harness

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Worker is one load-generating loop's state.
type Worker struct {
	// Do makes one request and calls rec with each latency sample it
	// measured (once for a plain request, once per event for a stream).
	Do func(ctx context.Context, rec func(time.Duration)) error
	// Close releases what the worker opened (a session); nil for nothing.
	Close func()
}

// LoadSpec describes one load run.
type LoadSpec struct {
	// Concurrency is the number of workers, each with one request in
	// flight at a time.
	Concurrency int
	// Warmup runs before measuring and its samples are dropped.
	Warmup time.Duration
	// Duration bounds the measured phase.
	Duration time.Duration
	// MaxSamples bounds the measured phase's sample count, shared evenly
	// between workers.
	MaxSamples int
	// NewWorker prepares one worker on the shared client.
	NewWorker func(ctx context.Context, c *http.Client) (Worker, error)
	// OnMeasure, when set, is called once as the measured phase starts.
	OnMeasure func()
}

// LoadResult is what a load run measured.
type LoadResult struct {
	// Samples holds every measured latency.
	Samples []time.Duration
	// Ops and Errors count measured requests and failed ones.
	Ops, Errors int64
	// Elapsed is the length of the measured phase.
	Elapsed time.Duration
	// Err is the first error seen (setup or request); nil if none.
	Err error
}

// NewClient returns a keep-alive client for concurrency workers on loopback.
func NewClient(concurrency int) *http.Client {
	tr := &http.Transport{
		MaxIdleConns:        2 * concurrency,
		MaxIdleConnsPerHost: 2 * concurrency,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr}
}

// RunLoad runs spec: it prepares the workers, runs them through the warm-up
// and then the measured phase, and closes them.
func RunLoad(ctx context.Context, spec LoadSpec) LoadResult {
	c := NewClient(spec.Concurrency)
	defer c.CloseIdleConnections()

	var res LoadResult
	workers := make([]Worker, 0, spec.Concurrency)
	defer func() {
		for _, w := range workers {
			if w.Close != nil {
				w.Close()
			}
		}
	}()
	for range spec.Concurrency {
		w, err := spec.NewWorker(ctx, c)
		if err != nil {
			res.Err = err
			return res
		}
		workers = append(workers, w)
	}

	start := time.Now()
	measureAt := start.Add(spec.Warmup)
	end := measureAt.Add(spec.Duration)
	perWorker := max(spec.MaxSamples/spec.Concurrency, 1)
	if spec.OnMeasure != nil {
		t := time.AfterFunc(spec.Warmup, spec.OnMeasure)
		defer t.Stop()
	}

	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		ops     atomic.Int64
		errs    atomic.Int64
		lastEnd time.Duration
	)
	for _, w := range workers {
		wg.Go(func() {
			local := make([]time.Duration, 0, min(perWorker, 1<<16))
			var firstErr error
			measuredOps := 0
			for {
				t0 := time.Now()
				// Past the end, a worker still makes one measured request
				// if it has none yet (a slow request that started in the
				// warm-up), within a grace of one more duration.
				over := t0.After(end) && (measuredOps > 0 || t0.After(end.Add(spec.Duration)))
				if over || len(local) >= perWorker || ctx.Err() != nil {
					break
				}
				measuring := !t0.Before(measureAt)
				rec := func(d time.Duration) {
					if measuring {
						local = append(local, d)
					}
				}
				err := w.Do(ctx, rec)
				if measuring {
					measuredOps++
					ops.Add(1)
					if err != nil {
						errs.Add(1)
					}
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err != nil && !measuring {
					// Fail fast: a target that cannot answer during the
					// warm-up will not answer in the measured phase.
					break
				}
			}
			mu.Lock()
			lastEnd = max(lastEnd, time.Since(start))
			res.Samples = append(res.Samples, local...)
			if res.Err == nil {
				res.Err = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.Ops, res.Errors = ops.Load(), errs.Load()
	res.Elapsed = lastEnd - spec.Warmup
	return res
}

// Timed wraps a request function as a Worker.Do that records its latency.
func Timed(fn func(ctx context.Context) error) func(context.Context, func(time.Duration)) error {
	return func(ctx context.Context, rec func(time.Duration)) error {
		t0 := time.Now()
		err := fn(ctx)
		if err == nil {
			rec(time.Since(t0))
		}
		return err
	}
}
