package harness

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
)

// ServeLoopProxy serves a second floor, below any proxy built on net/http's
// server: one goroutine per client connection reads a request with
// http.ReadRequest, writes it on that goroutine's own kept-alive upstream
// connection, reads the reply with http.ReadResponse and writes it back
// with Response.Write. No background reader, no request context, no
// connection pool, no hand-off between goroutines: what is left is the cost
// of HTTP/1.1 parsing and of the system calls and wake-ups of a hop in a Go
// process. It is a measuring stick for scripts/bench-wrk.sh, not a proxy:
// no timeouts, no limits, replies sent whole (an SSE stream arrives in
// buffer-sized pieces), and any error drops the connection.
func ServeLoopProxy(ctx context.Context, o ServeOptions) error {
	return serveRelay(ctx, o, relayLoop)
}

// serveRelay listens on o.Listen and relays to o.Upstream (http://host:port)
// by relay (serveLoop).
func serveRelay(ctx context.Context, o ServeOptions, relay func(c, up net.Conn)) error {
	u, err := url.Parse(o.Upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("parse upstream %q: want http://host:port", o.Upstream)
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	return serveLoop(ctx, l, u.Host, relay)
}

// serveLoop relays every connection l accepts to upstream (host:port),
// each on its own goroutine with its own upstream connection, by relay,
// until ctx ends, then closes l and every connection.
func serveLoop(ctx context.Context, l net.Listener, upstream string, relay func(c, up net.Conn)) error {
	var (
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
		wg    sync.WaitGroup
	)
	track := func(c net.Conn, add bool) {
		mu.Lock()
		defer mu.Unlock()
		if add {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	})
	defer stop()
	for {
		c, err := l.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		track(c, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer track(c, false)
			defer c.Close()
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				return
			}
			track(up, true)
			defer track(up, false)
			defer up.Close()
			relay(c, up)
		}()
	}
}

// relayLoop carries requests from c to up and replies back, one at a time,
// until either side fails or closes.
func relayLoop(c, up net.Conn) {
	cr, cw := bufio.NewReader(c), bufio.NewWriter(c)
	ur, uw := bufio.NewReader(up), bufio.NewWriter(up)
	for {
		req, err := http.ReadRequest(cr)
		if err != nil {
			return
		}
		req.RequestURI, req.URL.Scheme, req.URL.Host = "", "http", req.Host
		if err := req.Write(uw); err != nil || uw.Flush() != nil {
			return
		}
		resp, err := http.ReadResponse(ur, req)
		if err != nil {
			return
		}
		err = resp.Write(cw)
		resp.Body.Close()
		if err != nil || cw.Flush() != nil || resp.Close || req.Close {
			return
		}
	}
}
