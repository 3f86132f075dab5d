package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// A standalone GET stream spends its life waiting, and while a handler
// waits net/http keeps, per connection, the handler's goroutine with the
// stack its request path grew, a second goroutine watching for the client
// to leave, and 10 KiB of buffers. That was most of an idle stream's cost.
// So once the upstream has answered a standalone GET with an event stream,
// the sidecar takes the client connection over (http.Hijacker), writes the
// response head itself, lets the handler return, and relays the stream on
// one small goroutine, with another, smaller one reading the client
// connection to learn when the client leaves. The bytes on the wire are
// those net/http would send, plus Connection: close, since the connection
// is not handed back to net/http when the stream ends. Where the writer
// cannot be hijacked (HTTP/2, a test recorder) the stream is relayed in
// the handler as before.

// detachable is the context of a standalone GET's upstream request: not
// the client request's own, which ends when the handler returns, but one
// that follows it until the stream is detached.
type detachable struct {
	pl     *plan
	parent context.Context // the client request's
	ctx    context.Context
	cancel context.CancelFunc
	unlink func() bool // stops following parent
	done   bool        // detached: the pump owns ctx now
}

func newDetachable(parent context.Context, pl *plan) *detachable {
	d := &detachable{pl: pl, parent: parent}
	d.ctx, d.cancel = context.WithCancel(context.WithoutCancel(parent))
	d.unlink = context.AfterFunc(parent, d.cancel)
	return d
}

// cancelUnlessDetached ends the upstream request when the handler returns
// without having detached the stream.
func (d *detachable) cancelUnlessDetached() {
	if !d.done {
		d.unlink()
		d.cancel()
	}
}

// detach serves resp, an upstream reply to a standalone GET with media type
// mt, on its own goroutine if it is an event stream and w can be hijacked, and reports
// whether it did. On false the caller relays resp as usual.
func (p *Proxy) detach(w http.ResponseWriter, resp *http.Response, mt string, d *detachable) bool {
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" || len(resp.Trailer) > 0 {
		return false
	}
	if !d.unlink() {
		return false // the client already left; the relay finds out at once
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		d.unlink = context.AfterFunc(d.parent, d.cancel) // follow the client again
		return false
	}
	d.done = true
	pl := d.pl
	pl.detached = true
	// The chunked body keeps resp for its trailers; the request it holds
	// (and its header map) is not needed any more.
	resp.Request = nil
	head := responseHead(resp.Header)
	if n := brw.Reader.Buffered(); n > 0 {
		// The client sent more after its GET (a pipelined request): it
		// cannot be answered on a connection given over to a stream.
		head = nil
	}
	p.detached.Add(1)
	go func() {
		defer p.detached.Done()
		pl.err = p.pump(conn, head, resp.Body, d.cancel, pl.session, pl.who)
		p.record(pl, routeUpstream, http.StatusOK) // its duration is the stream's life
	}()
	return true
}

// responseHead is the status line and header block of a detached stream.
func responseHead(h http.Header) []byte {
	b := []byte("HTTP/1.1 200 OK\r\n")
	if _, ok := h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
		b = append(b, "\r\n"...)
	}
	w := &appendWriter{b: b}
	_ = h.WriteSubset(w, map[string]bool{"Content-Length": true, "Connection": true, "Transfer-Encoding": true})
	w.b = append(w.b, "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n"...)
	return w.b
}

type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// pump relays a detached stream: the head, then each read of body as one
// chunk, then the last chunk when the stream ends cleanly (the upstream
// ended it, or EndStreams). An upstream failure cuts the connection without
// a last chunk, so the client sees a broken stream, not a finished one,
// and is returned for the request's log line; a client that left is not an
// error.
func (p *Proxy) pump(conn net.Conn, head []byte, body io.ReadCloser, cancel context.CancelFunc, session string, who caller.ID) error {
	defer conn.Close()
	defer cancel()
	defer body.Close()
	if head == nil {
		return nil
	}
	// The client has nothing more to send; a read returns when it leaves
	// (or misbehaves), and cancelling closes the upstream connection under
	// the pump's read (package hop), which ends the stream.
	var left atomic.Bool
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		left.Store(true)
		cancel()
	}()
	// Every write is bounded by the send timeout, as in the handler
	// (statusWriter): a client that takes nothing that long is cut, and
	// the stream's upstream request ends with the pump.
	send := p.opts.SendTimeout
	_ = conn.SetWriteDeadline(time.Now().Add(send))
	if _, err := conn.Write(head); err != nil {
		return nil
	}
	cw := &chunkWriter{conn: conn, send: send}
	out, end := p.withNotify(cw, session, who)
	err := copyBody(out, body, nil, eachRead, p.buffers)
	end() // nothing more of the sidecar's goes after the stream's end
	switch {
	case cw.err != nil || left.Load():
		return nil
	case err != nil:
		return fmt.Errorf("upstream stream cut short: %w", err)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(send))
	_, _ = io.WriteString(conn, "0\r\n\r\n")
	return nil
}

// chunkWriter writes each Write as one HTTP/1.1 chunk, in one system call.
// It is the http.ResponseWriter copyBody needs, with no headers of its own.
type chunkWriter struct {
	conn net.Conn
	send time.Duration // each write's deadline from its start; 0: none
	err  error
	size [18]byte
}

func (c *chunkWriter) Header() http.Header { return http.Header{} }
func (c *chunkWriter) WriteHeader(int)     {}

func (c *chunkWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	size := strconv.AppendInt(c.size[:0], int64(len(p)), 16)
	size = append(size, '\r', '\n')
	bufs := net.Buffers{size, p, []byte("\r\n")}
	if c.send > 0 {
		_ = c.conn.SetWriteDeadline(time.Now().Add(c.send))
	}
	if _, err := bufs.WriteTo(c.conn); err != nil {
		c.err = err
		return 0, err
	}
	return len(p), nil
}

// WaitStreams waits until every detached stream has ended (after
// EndStreams, each writes its last chunk and closes), or ctx is done.
func (p *Proxy) WaitStreams(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		p.detached.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
