package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// sseBody re-emits an upstream SSE stream event by event: an event that
// carries a handshake reply is re-framed with the declaration spliced in
// (its id:, event: and other lines kept), every other event is copied as its
// raw bytes. Read returns as soon as one event is available, so the relay
// flushes each event to the client the moment it arrives.
type sseBody struct {
	r    *rewrite.Reader
	body io.ReadCloser
	edit func(msg []byte) []byte // returns msg itself when it changes nothing
	stop context.Context         // done: end the stream cleanly at an event boundary

	pending []byte
	err     error
	watched bool
	unwatch func() bool
}

func (s *sseBody) Read(p []byte) (int, error) {
	if !s.watched && s.stop != nil {
		s.watched = true
		// Closing the upstream body unblocks a pending read; next then
		// reports a clean EOF. AfterFunc costs no goroutine while idle.
		s.unwatch = context.AfterFunc(s.stop, func() { _ = s.body.Close() })
	}
	for len(s.pending) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.pending, s.err = s.next()
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// Buffered says what Read returns without waiting for the upstream
// (rewrite.Buffered): copyBody's flush policy, and whether the reply's
// first event came with its head.
func (s *sseBody) Buffered() int { return rewrite.Buffered(s.pending, s.err, s.r) }

func (s *sseBody) stopped() bool {
	return s.stop != nil && s.stop.Err() != nil
}

func (s *sseBody) next() ([]byte, error) {
	if s.stopped() {
		return nil, io.EOF
	}
	ev, err := s.r.Next()
	if err != nil {
		if s.stopped() || errors.Is(err, io.EOF) {
			return ev.Raw, io.EOF
		}
		return ev.Raw, err
	}
	if len(ev.Data) == 0 {
		return ev.Raw, nil
	}
	out := s.edit(ev.Data)
	if bytes.Equal(out, ev.Data) {
		return ev.Raw, nil
	}
	return rewrite.Reframe(ev, out), nil
}

// Close closes the upstream body and stops watching for shutdown.
func (s *sseBody) Close() error {
	if s.unwatch != nil {
		s.unwatch()
	}
	return s.body.Close()
}

// stoppableBody passes a standalone GET stream through untouched and ends
// it with a clean EOF on shutdown: the chunked reply is terminated properly
// and the client reconnects (with Last-Event-ID) elsewhere. An event cut
// mid-way is discarded by the client, as the SSE spec says of a stream that
// ends before a blank line.
type stoppableBody struct {
	io.ReadCloser
	stop    context.Context
	unwatch func() bool
}

func newStoppableBody(body io.ReadCloser, stop context.Context) *stoppableBody {
	b := &stoppableBody{ReadCloser: body, stop: stop}
	b.unwatch = context.AfterFunc(stop, func() { _ = body.Close() })
	return b
}

func (b *stoppableBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.stop.Err() != nil {
		return n, io.EOF
	}
	return n, err
}

// Close stops watching for shutdown and closes the upstream body.
func (b *stoppableBody) Close() error {
	b.unwatch()
	return b.ReadCloser.Close()
}

// Buffered passes on what the body holds (copyBody's flush policy).
func (b *stoppableBody) Buffered() int { return buffered(b.ReadCloser) }
