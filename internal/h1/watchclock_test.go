package h1

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOneWatchClockForBusyConnections: with sixteen connections busy with
// fast requests, the server's one watch timer fires about once per
// watchDelay, where a timer per connection fired sixteen times; and a slow
// request among them is still watched once it has run for watchDelay, not
// sooner and not only when the others stop: its client leaving cancels it.
func TestOneWatchClockForBusyConnections(t *testing.T) {
	canceled := make(chan time.Time, 1)
	s, addr, _ := start(t, fastOrSlow(canceled))
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		slowest atomic.Int64 // the longest fast request, in nanoseconds
	)
	began := time.Now()
	for range 16 {
		c, br := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				t0 := time.Now()
				io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
				resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
				if err != nil {
					t.Errorf("a fast request: %v", err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				if d := int64(time.Since(t0)); d > slowest.Load() {
					slowest.Store(d) // one writer per connection; a lost maximum only loosens the bound
				}
			}
		}()
	}
	time.Sleep(watchDelay / 2)
	c, _ := dial(t, addr)
	sent := time.Now() // no later than the server's start of the request
	io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	c.Close()
	at := <-canceled
	d := at.Sub(sent) // the fast requests go on until the slow one ends, and a while after
	time.Sleep(4*watchDelay - time.Since(began))
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(began)
	switch {
	case at.IsZero():
		t.Fatal("a slow request among busy connections was not canceled when its client left")
	case d < watchDelay*4/5:
		t.Fatalf("the slow request was watched after %v, before it had run for %v", d, watchDelay)
	}
	// Each sweep sets the clock for the oldest request then running, which
	// began at most the slowest fast request's time before it; never
	// sooner than sweepEvery after it.
	gap := max(watchDelay-time.Duration(slowest.Load()), sweepEvery)
	limit := int64(elapsed/gap) + 3
	if n := s.watches.sweeps.Load(); n > limit {
		t.Errorf("the watch clock fired %d times in %v with sixteen busy connections (slowest fast request %v), want at most %d",
			n, elapsed.Round(time.Millisecond), time.Duration(slowest.Load()).Round(time.Millisecond), limit)
	}
}
