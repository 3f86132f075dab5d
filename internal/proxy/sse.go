package proxy

import (
	"bytes"
	"errors"
	"io"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// sseBody re-emits an upstream SSE stream event by event: an event that
// carries a handshake reply is re-framed with the declaration spliced in
// (its id:, event: and other lines kept), every other event is copied as its
// raw bytes. Read returns as soon as one event is available, so httputil
// flushes each event to the client the moment it arrives.
type sseBody struct {
	r    *rewrite.Reader
	body io.ReadCloser
	edit func(msg []byte) []byte // returns msg itself when it changes nothing
	stop <-chan struct{}         // closed: end the stream cleanly at an event boundary

	pending []byte
	err     error
	watched bool
	closeCh chan struct{} // closed by Close: ends watch
}

func (s *sseBody) Read(p []byte) (int, error) {
	if !s.watched && s.stop != nil {
		s.watched = true
		s.closeCh = make(chan struct{})
		go s.watch(s.closeCh)
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

// watch closes the upstream body when the stream must end, which unblocks a
// pending read; next then reports a clean EOF.
func (s *sseBody) watch(closed <-chan struct{}) {
	select {
	case <-s.stop:
		_ = s.body.Close()
	case <-closed:
	}
}

func (s *sseBody) stopped() bool {
	if s.stop == nil {
		return false
	}
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
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

// Close closes the upstream body and ends the watcher. httputil calls it
// once, from the goroutine that reads.
func (s *sseBody) Close() error {
	if s.closeCh != nil {
		close(s.closeCh)
		s.closeCh = nil
	}
	return s.body.Close()
}
