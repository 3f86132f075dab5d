package h1

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves HTTP/1.1 on the connections of a listener with Handler, as
// an http.Server with the same fields would.
type Server struct {
	Handler           http.Handler
	ReadHeaderTimeout time.Duration // from the first byte of a head (and for a new connection from accept) to its end
	IdleTimeout       time.Duration // between requests on a kept-alive connection
	MaxHeaderBytes    int           // request line + header block; larger gets 431
	ErrorLog          *log.Logger   // nil: log.Default()

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	shutting  atomic.Bool
	watches   watchClock
}

// Serve accepts connections on l and serves each on its own goroutine. It
// returns http.ErrServerClosed once Shutdown or Close was called, or the
// error of an accept that is not temporary.
func (s *Server) Serve(l net.Listener) error {
	if !s.trackListener(l, true) {
		return http.ErrServerClosed
	}
	defer s.trackListener(l, false)
	var delay time.Duration
	for {
		rw, err := l.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logf("http: Accept error: %v; retrying in %v", err, delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		c := newConn(s, rw)
		if !s.trackConn(c, true) {
			rw.Close()
			continue
		}
		go c.serve()
	}
}

func (s *Server) trackListener(l net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.listeners, l)
		return true
	}
	if s.shutting.Load() {
		return false
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
	}
	s.listeners[l] = struct{}{}
	return true
}

func (s *Server) trackConn(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.conns, c)
		return true
	}
	if s.shutting.Load() {
		return false
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

// closeListenersLocked closes every listener; s.mu is held.
func (s *Server) closeListenersLocked() error {
	var err error
	for l := range s.listeners {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// Shutdown stops accepting, closes idle connections, and waits for the
// active ones to finish their request and close, or for ctx to end (its
// error then). Hijacked connections are not waited for.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.mu.Lock()
	lerr := s.closeListenersLocked()
	s.mu.Unlock()
	interval := time.Millisecond
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		if s.closeIdle() {
			return lerr
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			interval = min(2*interval, 500*time.Millisecond)
			t.Reset(interval)
		}
	}
}

// newIdleAfter is how long a connection that has sent nothing yet counts
// as busy for Shutdown, as in net/http.
const newIdleAfter = 5 * time.Second

// closeIdle closes the connections waiting for a request and reports
// whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	quiet := true
	for c := range s.conns {
		st := c.state.Load()
		if st == stateActive || (st == stateNew && time.Since(c.accepted) < newIdleAfter) {
			quiet = false
			continue
		}
		c.rwc.Close()
		delete(s.conns, c)
	}
	return quiet
}

// Close closes the listeners and every connection now.
func (s *Server) Close() error {
	s.shutting.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.closeListenersLocked()
	for c := range s.conns {
		c.rwc.Close()
		delete(s.conns, c)
	}
	return err
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

func (s *Server) handler() http.Handler {
	if s.Handler != nil {
		return s.Handler
	}
	return http.DefaultServeMux
}
