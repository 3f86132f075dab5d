package hop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Upstreams spares must not hurt, found by review: one that serves one
// connection at a time and closes after each reply (a worker would sit on
// an idle spare while the next caller's request waits), and one that
// closes idle connections sooner than spares wait (every spare would be a
// connection dialled in vain).

// oneAtATime serves one connection at a time, in accept order, and closes
// it after one reply, as Python's http.server with HTTP/1.0 or a
// one-worker gunicorn sync server does.
func oneAtATime(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			req, err := http.ReadRequest(bufio.NewReader(nc)) // blocks: one connection at a time
			if err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(nc, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
			}
			nc.Close()
		}
	}()
	return "http://" + ln.Addr().String(), &accepted
}

// postAs sends a POST to url with the bearer token and reads the reply.
func postAs(ctx context.Context, tr *Transport, url, token string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// TestNoSparesForAnUpstreamThatCloses: new callers of an upstream that
// serves one connection at a time and closes after each reply are all
// answered, each on a connection of its own, and no spare is dialled for
// it; another client of the upstream (a kubelet probe) is answered too.
func TestNoSparesForAnUpstreamThatCloses(t *testing.T) {
	url, accepted := oneAtATime(t)
	tr := &Transport{Spares: 8, Partition: []string{"Authorization"}}
	defer tr.CloseIdleConnections()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := postAs(ctx, tr, url, fmt.Sprint(i))
		cancel()
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		time.Sleep(20 * time.Millisecond) // a refill, if one wrongly ran, has dialled
	}
	if n := accepted.Load(); n != 3 {
		t.Errorf("3 callers cost %d connections, want 3: spares were dialled for an upstream that closes", n)
	}
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := probe.Get(url + "/healthz")
	if err != nil {
		t.Fatalf("another client of the upstream: %v", err)
	}
	r.Body.Close()
}

// TestSparesPauseWhenTheyDieIdle: a keep-alive upstream that closes a
// connection on which no request came within 250 ms (net/http's
// ReadHeaderTimeout) closes every spare before the next caller comes. Once
// one is found dead the refills pause, so five callers 600 ms apart cost
// their own connections and at most one set of spares, not a set each.
// (At 50 ms a caller's own new connection was reset once on a loaded
// machine: its request head had taken longer than that to go out; 250 ms
// leaves a race-detector build under load room too.)
func TestSparesPauseWhenTheyDieIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 250 * time.Millisecond,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted.Add(1)
			}
		}}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	const spares, callers = 4, 5
	tr := &Transport{Spares: spares, Partition: []string{"Authorization"}}
	defer tr.CloseIdleConnections()
	for i := range callers {
		if err := postAs(context.Background(), tr, "http://"+ln.Addr().String(), fmt.Sprint(i)); err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		time.Sleep(600 * time.Millisecond)
	}
	// The first caller's own connection, one set of spares (all found
	// dead by the second caller, which pauses refills), and a connection
	// of its own for every caller after the first.
	if n, most := accepted.Load(), int64(callers+spares); n > most {
		t.Errorf("%d callers cost %d connections, want at most %d: spares were dialled again after they died idle", callers, n, most)
	}
}
