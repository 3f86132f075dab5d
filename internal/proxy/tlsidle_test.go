package proxy_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
)

// TestHTTPSUpstreamUnpartitionedKeepsItsPool: with no credentials headers
// to partition by, the https upstream's connections all go through the one
// net/http Transport the sidecar builds, never cloned, and it keeps as many
// idle as the http pool does: a second burst of concurrent requests reuses
// every connection the first opened (net/http's Transport puts a
// connection back before a read of its reply's end returns).
func TestHTTPSUpstreamUnpartitionedKeepsItsPool(t *testing.T) {
	const burst = 16
	var conns atomic.Int32
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hold every request of a burst until all have come, so that each
		// has a connection of its own.
		mu.Lock()
		arrived++
		if arrived == burst {
			close(all)
		}
		ch := all
		mu.Unlock()
		select {
		case <-ch:
		case <-time.After(10 * time.Second): // hang guard
		}
		io.WriteString(w, "ok")
	}))
	up.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	up.StartTLS()
	defer up.Close()
	tr := proxy.NewTransport(5*time.Second, 15*time.Second, nil)
	tr.(*hop.Transport).Fallback.(*http.Transport).TLSClientConfig = up.Client().Transport.(*http.Transport).TLSClientConfig
	t.Cleanup(tr.(*hop.Transport).CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	for round := 0; round < 2; round++ {
		mu.Lock()
		arrived, all = 0, make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		errs := make(chan error, burst)
		for i := 0; i < burst; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Get(up.URL)
				if err != nil {
					errs <- err
					return
				}
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != burst {
		t.Errorf("two bursts of %d requests opened %d connections to the https upstream, want %d", burst, n, burst)
	}
}
