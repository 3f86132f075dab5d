package hop

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestFallbackPartitionsNeverShareAConnection: an https upstream goes
// through the Fallback, and there too requests with different credentials
// go out on different connections (TLS connections counted at the
// server), while a caller's next request reuses its own.
func TestFallbackPartitionsNeverShareAConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("Authorization"))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	tr := &Transport{Partition: []string{"Authorization", "Cookie"}, Fallback: srv.Client().Transport}
	t.Cleanup(tr.CloseIdleConnections)
	for _, cred := range []string{"Bearer a", "Bearer b", "", "Bearer a", "Bearer b", ""} {
		req := get(t, srv.URL)
		if cred != "" {
			req.Header.Set("Authorization", cred)
		}
		if _, body := do(t, tr, req); body != cred {
			t.Fatalf("reply %q, want %q", body, cred)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("upstream accepted %d TLS connections for 3 callers, want 3", n)
	}
}

// TestFallbackPartitionsBounded: at most FallbackPartitions callers keep
// a Fallback of their own; the next one evicts the caller least recently
// seen, whose idle connections close, and whose next request dials anew.
func TestFallbackPartitionsBounded(t *testing.T) {
	var conns, closed atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	tr := &Transport{Partition: []string{"Authorization"}, Fallback: srv.Client().Transport}
	t.Cleanup(tr.CloseIdleConnections)
	call := func(i int) {
		req := get(t, srv.URL)
		req.Header.Set("Authorization", fmt.Sprint("Bearer ", i))
		do(t, tr, req)
	}
	for i := range FallbackPartitions + 1 {
		call(i)
	}
	tr.fbMu.Lock()
	n := len(tr.fallbacks)
	tr.fbMu.Unlock()
	if n != FallbackPartitions {
		t.Fatalf("%d fallbacks kept, want %d", n, FallbackPartitions)
	}
	// Caller 0, seen least recently, was evicted: its connection closes.
	waitFor(t, "the evicted caller's connection to close", func() bool { return closed.Load() == 1 })
	// The newest caller reuses its connection; caller 0 dials again.
	before := conns.Load()
	call(FallbackPartitions)
	if d := conns.Load() - before; d != 0 {
		t.Errorf("a kept caller dialled %d connections, want 0", d)
	}
	call(0)
	if d := conns.Load() - before; d != 1 {
		t.Errorf("the evicted caller dialled %d connections, want 1", d)
	}
}
