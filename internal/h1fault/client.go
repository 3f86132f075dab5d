package h1fault

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// never is how long any one wait of a case lasts before it counts as
// "never": far beyond what a loaded machine needs, so no case fails on
// speed.
const never = 10 * time.Second

// host is the Host every case's well-formed request names.
const host = "h1fault.test"

// next is the request a case writes after the one it judges, in the same
// write: answered only where the server may read on, and its reply tells
// where the server thought the first request ended.
const next = "GET /echo?next HTTP/1.1\r\nHost: " + host + "\r\n\r\n"

// client is one raw connection to the server under test.
type client struct {
	c  net.Conn
	br *bufio.Reader
}

func dial(addr string) (*client, error) {
	c, err := net.DialTimeout("tcp", addr, never)
	if err != nil {
		return nil, err
	}
	return &client{c: c, br: bufio.NewReader(c)}, nil
}

func (c *client) send(s string) error {
	c.c.SetWriteDeadline(time.Now().Add(never))
	_, err := io.WriteString(c.c, s)
	return err
}

// read reads one response (interim ones included) within never.
func (c *client) read(method string) (*Response, error) {
	c.c.SetReadDeadline(time.Now().Add(never))
	r, err := ReadResponse(c.br, method)
	if err == nil && r.Status >= 100 && r.Status < 200 && r.Status != 101 {
		if len(r.Get("Content-Length")) > 0 || len(r.Get("Transfer-Encoding")) > 0 {
			// RFC 9110 8.6 and RFC 9112 6.1: MUST NOT.
			return r, fmt.Errorf("a %d response with Content-Length or Transfer-Encoding", r.Status)
		}
	}
	return r, err
}

// final reads responses until a final (non-1xx) one.
func (c *client) final(method string) (*Response, error) {
	for {
		r, err := c.read(method)
		if err != nil || r.Status >= 200 {
			return r, err
		}
	}
}

// closed waits up to within for the server to close the connection and
// fails if it does not or if any byte comes first.
func (c *client) closed(within time.Duration) error {
	c.c.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 512)
	n, err := c.br.Read(buf)
	if n > 0 {
		return fmt.Errorf("bytes where the connection should close: %q", clip(buf[:n]))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("connection still open %s after it should have closed", within)
	}
	return nil
}

func (c *client) close() { c.c.Close() }

// echoed parses an /echo reply's lines.
func echoed(r *Response) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(string(clip(r.Body)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// wantEcho checks r is a 200 from /echo with the given fields.
func wantEcho(r *Response, kv ...string) error {
	if r.Status != 200 {
		return fmt.Errorf("status %d, want 200 (body %q)", r.Status, clip(r.Body))
	}
	m := echoed(r)
	for i := 0; i+1 < len(kv); i += 2 {
		if m[kv[i]] != kv[i+1] {
			return fmt.Errorf("echo %s=%q, want %q (body %q)", kv[i], m[kv[i]], kv[i+1], clip(r.Body))
		}
	}
	return nil
}

// wantNext reads the reply to next.
func (c *client) wantNext() error {
	r, err := c.final("GET")
	if err != nil {
		return fmt.Errorf("reply to the request after: %w", err)
	}
	if err := wantEcho(r, "method", "GET", "target", "/echo?next"); err != nil {
		return fmt.Errorf("reply to the request after: %w", err)
	}
	return nil
}

// exchange dials, writes raw and reads the final response to it.
func exchange(addr, raw, method string) (*client, *Response, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, nil, err
	}
	if err := c.send(raw); err != nil {
		c.close()
		return nil, nil, err
	}
	r, err := c.final(method)
	if err != nil {
		c.close()
		return nil, nil, fmt.Errorf("reading the reply: %w", err)
	}
	return c, r, nil
}

// ended reports whether err is the connection's end: the server's close
// (EOF) or its reset, which a server may send instead of a close when
// input it did not read is left (RFC 9112 9.6 speaks of the reset a
// client may see after a close).
func ended(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// rejected: raw (followed by next) gets a status among codes and the
// connection closes without an answer to next. For the faults after
// which the RFC requires the close (RFC 9112 6.3 items 4 and 5, and
// framing that cannot be trusted).
func rejected(addr, raw string, codes ...int) error {
	c, r, err := exchange(addr, raw+next, "POST")
	if err != nil {
		return err
	}
	defer c.close()
	if !slices.Contains(codes, r.Status) {
		return fmt.Errorf("status %d, want one of %v (body %q)", r.Status, codes, clip(r.Body))
	}
	return c.closed(never)
}

// refused: raw (followed by next) gets a status among codes; then the
// connection closes or next is answered, the server's choice, for the
// faults whose rule asks for the status alone (the message's framing is
// sound, so reading on is safe).
func refused(addr, raw string, codes ...int) error {
	c, r, err := exchange(addr, raw+next, "POST")
	if err != nil {
		return err
	}
	defer c.close()
	if !slices.Contains(codes, r.Status) {
		return fmt.Errorf("status %d, want one of %v (body %q)", r.Status, codes, clip(r.Body))
	}
	status := r.Status
	r, err = c.final("GET")
	if ended(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("after the %d: %w", status, err)
	}
	if err := wantEcho(r, "target", "/echo?next"); err != nil {
		return fmt.Errorf("after the refusal: %w", err)
	}
	return nil
}

// rejectedOr: raw (followed by next) either is rejected as by rejected,
// or gets a reply accept takes, after which next is answered too (the
// server read the message as the RFC's alternative allows).
func rejectedOr(addr, raw string, accept func(*Response) error, codes ...int) error {
	c, r, err := exchange(addr, raw+next, "POST")
	if err != nil {
		return err
	}
	defer c.close()
	if slices.Contains(codes, r.Status) {
		return c.closed(never)
	}
	if err := accept(r); err != nil {
		return err
	}
	return c.wantNext()
}

// accepted: raw (followed by next) gets a reply accept takes, then next
// is answered.
func accepted(addr, raw string, accept func(*Response) error) error {
	return rejectedOr(addr, raw, accept)
}

// badBody: raw has a malformed body. The server rejects it (4xx, from
// itself or the handler's failed read) or closes, and never answers the
// request smuggled after it nor next.
func badBody(addr, raw string) error { return badBodySent(addr, raw, false) }

// badBodyFlood is badBody for a body so long that the server may refuse
// it and close while the client is still writing: the write goes on in
// the background and its failure is no fault.
func badBodyFlood(addr, raw string) error { return badBodySent(addr, raw, true) }

// badBodySent is badBody, its bytes written in the background when
// background is set.
func badBodySent(addr, raw string, background bool) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.close()
	msg := raw + "GET /smuggled HTTP/1.1\r\nHost: " + host + "\r\n\r\n" + next
	if background {
		go c.send(msg)
	} else if err := c.send(msg); err != nil {
		return err
	}
	r, err := c.final("POST")
	if ended(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the reply: %w", err)
	}
	if r.Status < 400 || r.Status > 499 {
		return fmt.Errorf("status %d for a malformed body, want 4xx (body %q)", r.Status, clip(r.Body))
	}
	return c.closed(never)
}

var waitIDs atomic.Int64

// newWaitID names one /wait request of this process.
func newWaitID() string {
	return fmt.Sprintf("w%d-%d", time.Now().UnixNano(), waitIDs.Add(1))
}

// waitFor waits within never for ch to close.
func waitFor(ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-time.After(never):
		return fmt.Errorf("%s: not within %s (is the server serving Handler in this process?)", what, never)
	}
}

// clip shortens b for an error's text.
func clip(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "..."...)
	}
	return b
}
