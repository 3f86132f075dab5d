// Package faultserver owns the fault-injecting upstream of the tests: a raw
// HTTP/1.1 server, written on a bare TCP listener rather than net/http, that
// answers every request and then misbehaves in exactly one way per Mode
// (an unsolicited second response, a Content-Length shorter than the body,
// a stray byte, a close without notice, an early answer while the request
// body is still coming, a reset after the headers, a stream that never
// ends). net/http's server cannot be made to do most of these, which is
// why it is not used.
//
// It is a test peer only: nothing in the sidecar imports it. It listens on
// loopback, and every goroutine it starts ends with Close. Its default
// reply is a JSON-RPC result that echoes the request's raw id and the
// caller's Authorization header, so a test can tell whose reply a caller
// received.
package faultserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is the one fault a Server injects.
type Mode int

// The faults. Each is described as the bytes the server puts on the wire
// after (or instead of) a well-formed reply.
const (
	// Normal answers every request well and keeps the connection alive.
	Normal Mode = iota
	// Unsolicited answers, then after Options.Delay writes a second complete
	// response (the same reply again) on the same connection, unasked.
	Unsolicited
	// ShortLength answers with a body longer than its Content-Length: past
	// the length, in the same write, a whole second response follows.
	ShortLength
	// StrayByte answers, then after Options.Delay writes one byte.
	StrayByte
	// CloseAfter answers (without Connection: close) and closes.
	CloseAfter
	// EarlyReply answers as soon as the request head is read, without
	// reading the body, then closes the connection (the way an upstream's
	// 401 or 413 ends a large upload). Options.Reply usually sets a status.
	EarlyReply
	// ResetAfterHeaders writes the reply's head (with its Content-Length)
	// and resets the connection before any body byte.
	ResetAfterHeaders
	// Stream answers with an SSE stream of Options.EventBytes-sized events
	// written as fast as the connection takes them, until a write fails.
	// Active counts the streams still being written.
	Stream
	// EarlyReplyKeep answers as soon as the request head is read, as
	// EarlyReply does, but without Connection: close, and then neither
	// reads the rest of the request nor closes: the connection stays open,
	// unread, until the server closes.
	EarlyReplyKeep
)

// String names the mode, for subtest names.
func (m Mode) String() string {
	names := [...]string{"normal", "unsolicited", "short-length", "stray-byte", "close-after",
		"early-reply", "reset-after-headers", "stream", "early-reply-keep"}
	if int(m) < len(names) && m >= 0 {
		return names[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Reply is what the server answers a request with.
type Reply struct {
	Status int         // 0 means 200
	Header http.Header // Content-Length is set by the server
	Body   []byte
}

// Options configure a Server.
type Options struct {
	Mode Mode
	// Delay is how long after a reply an Unsolicited response or a
	// StrayByte follows; 0 means 20ms.
	Delay time.Duration
	// Reply builds the answer to a request (body is what was read of it,
	// nil in EarlyReply and EarlyReplyKeep modes); nil means EchoReply.
	Reply func(r *http.Request, body []byte) Reply
	// EventBytes is the size of one Stream event; 0 means 16 KiB.
	EventBytes int
}

// Server is a running fault-injecting upstream.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:port; it answers any path.
	URL string

	opts     Options
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool // open connections: has it carried a request
	accepted atomic.Int64
	requests atomic.Int64
	active   atomic.Int64
	faults   atomic.Int64
	closed   chan struct{}
}

// TB is the part of testing.TB Start uses (this package is built as
// production code, so it may not import package testing).
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Start starts a Server on a loopback port, closed when the test ends; a
// port that cannot be had fails the test.
func Start(t TB, opts Options) *Server {
	t.Helper()
	if opts.Delay <= 0 {
		opts.Delay = 20 * time.Millisecond
	}
	if opts.Reply == nil {
		opts.Reply = EchoReply
	}
	if opts.EventBytes <= 0 {
		opts.EventBytes = 16 << 10
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), opts: opts, ln: ln,
		conns: map[net.Conn]bool{}, closed: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, closes every connection and waits for every
// goroutine it started.
func (s *Server) Close() {
	select {
	case <-s.closed:
		return
	default:
	}
	close(s.closed)
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Accepted is the number of connections accepted so far.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// Requests is the number of request heads read so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Open is the number of connections open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// OpenUsed is the number of connections open now that have carried a
// request: Open without the connections a client dialled ahead and has not
// used (a Transport's spares).
func (s *Server) OpenUsed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, used := range s.conns {
		if used {
			n++
		}
	}
	return n
}

// Faults is the number of delayed faults (Unsolicited responses, stray
// bytes) and ShortLength overruns written so far, so that a test can wait
// for one to be on the wire instead of sleeping.
func (s *Server) Faults() int64 { return s.faults.Load() }

// Active is the number of Stream replies being written now: a stream ends
// (and stops counting) when a write to its connection fails.
func (s *Server) Active() int64 { return s.active.Load() }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns[c] = false
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.drop(c)
			s.serve(c)
		}()
	}
}

func (s *Server) drop(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// serve answers requests on c until the client leaves or the mode ends it.
// Writes to c from the delayed faults and from replies are serialised by wmu.
func (s *Server) serve(c net.Conn) {
	br := bufio.NewReader(c)
	var wmu sync.Mutex
	write := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := c.Write(b)
		return err
	}
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		s.requests.Add(1)
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		var body []byte
		if s.opts.Mode != EarlyReply && s.opts.Mode != EarlyReplyKeep {
			body, err = io.ReadAll(req.Body)
			if err != nil {
				return
			}
		}
		reply := s.opts.Reply(req, body)
		switch s.opts.Mode {
		case ShortLength:
			// The head's Content-Length covers the reply; past it, in the
			// same write, comes a whole second response: the body is longer
			// than its length says, and what follows looks like an answer.
			full := append(head(reply, len(reply.Body), ""), reply.Body...)
			if err := write(append(full, full...)); err != nil {
				return
			}
			s.faults.Add(1)
			continue
		case EarlyReply:
			_ = write(append(head(reply, len(reply.Body), "Connection: close\r\n"), reply.Body...))
			// Close at once with the request body unread: the kernel
			// answers what is still arriving with a reset.
			return
		case EarlyReplyKeep:
			_ = write(append(head(reply, len(reply.Body), ""), reply.Body...))
			<-s.closed // reads nothing more, and stays
			return
		case ResetAfterHeaders:
			_ = write(head(reply, len(reply.Body), ""))
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close sends RST, not FIN
			}
			return
		case Stream:
			s.stream(write)
			return
		}
		full := append(head(reply, len(reply.Body), ""), reply.Body...)
		if err := write(full); err != nil {
			return
		}
		switch s.opts.Mode {
		case Unsolicited:
			s.later(func() { _ = write(full); s.faults.Add(1) })
		case StrayByte:
			s.later(func() { _ = write([]byte{'\n'}); s.faults.Add(1) })
		case CloseAfter:
			return
		}
	}
}

// later runs f after the mode's delay unless the server closes first.
func (s *Server) later(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(s.opts.Delay)
		defer t.Stop()
		select {
		case <-t.C:
			f()
		case <-s.closed:
		}
	}()
}

// stream writes SSE events until a write fails.
func (s *Server) stream(write func([]byte) error) {
	s.active.Add(1)
	defer s.active.Add(-1)
	if write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")) != nil {
		return
	}
	ev := append([]byte("data: "), bytes.Repeat([]byte("x"), s.opts.EventBytes)...)
	ev = append(ev, "\n\n"...)
	chunk := fmt.Appendf(nil, "%x\r\n%s\r\n", len(ev), ev)
	for {
		select {
		case <-s.closed:
			return
		default:
		}
		if write(chunk) != nil {
			return
		}
	}
}

// head is a reply's status line and headers, with Content-Length n and
// any extra header lines.
func head(r Reply, n int, extra string) []byte {
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	h := r.Header
	if h == nil {
		h = http.Header{"Content-Type": {"application/json"}}
	}
	_ = h.WriteSubset(&b, map[string]bool{"Content-Length": true})
	b.WriteString("Content-Length: " + strconv.Itoa(n) + "\r\n" + extra + "\r\n")
	return b.Bytes()
}

// EchoReply answers a JSON-RPC request with a result naming the caller:
// {"jsonrpc":"2.0","id":<the request's raw id>,"result":{"caller":<its
// Authorization header>}}. A body without an id gets id null.
func EchoReply(r *http.Request, body []byte) Reply {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &env)
	id := env.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	caller, _ := json.Marshal(r.Header.Get("Authorization"))
	b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"caller":%s}}`, id, caller)
	return Reply{Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}
