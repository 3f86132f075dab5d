package notify

import (
	"io"
	"sync"
)

// Stream is one open stream. The upstream's bytes go through Write; the
// sidecar's notifications are written between them. Write, Flush and
// Close are for the one goroutine relaying the stream.
type Stream struct {
	hub   *Hub
	f     Filter
	w     io.Writer
	flush func()

	// mu orders every write to w: the relay's and the inserter's.
	mu     sync.Mutex
	at     boundary
	closed bool
	acked  bool // a modern stream's acknowledgement has been written
	armed  bool // the next event written is the acknowledgement
	err    error

	// pmu guards what is pending; never held across a write.
	pmu     sync.Mutex
	lists   lists // the list_changed notifications pending
	uris    []string
	running bool // an inserter goroutine is on its way
}

// lists is a set of list_changed notifications, one bit per listMethods
// entry.
type lists uint8

// listMethods are the list_changed notifications, in the order a stream
// writes them; bit i of lists is listMethods[i].
var listMethods = [...]string{MethodResourcesListChanged, MethodAgentsListChanged, MethodPromptsListChanged, MethodToolsListChanged}

const listResources lists = 1 // bit 0: resources/list_changed

// offer adds what is pending and wakes the inserter. It never blocks on I/O.
func (s *Stream) offer(add lists, uris []string) {
	if add == 0 && len(uris) == 0 {
		return
	}
	s.pmu.Lock()
	for i, m := range listMethods {
		if bit := lists(1) << i; add&bit != 0 && s.lists&bit != 0 {
			s.count(m, true)
		}
	}
	s.lists |= add
	for i, u := range uris {
		if len(s.uris) >= MaxPendingURIs {
			// Too many files changed for this reader to be told one by
			// one: a re-list tells it everything.
			for range uris[i:] {
				s.count(MethodResourcesUpdated, true)
			}
			s.lists |= listResources
			break
		}
		if contains(s.uris, u) {
			s.count(MethodResourcesUpdated, true)
		} else {
			s.uris = append(s.uris, u)
		}
	}
	start := !s.running
	s.running = true
	s.pmu.Unlock()
	if start {
		go s.insert()
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// insert writes what is pending if the stream is between events; otherwise
// the relay's next Write that ends an event does.
func (s *Stream) insert() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pmu.Lock()
	s.running = false
	s.pmu.Unlock()
	if s.writePending() && s.flush != nil {
		s.flush()
	}
}

// writePending writes the pending notifications when the stream may take
// them, and reports whether it wrote any. s.mu is held.
func (s *Stream) writePending() bool {
	if s.closed || s.err != nil || !s.acked || !s.at.between() {
		return false
	}
	s.pmu.Lock()
	pending, uris := s.lists, s.uris
	s.lists, s.uris = 0, nil
	s.pmu.Unlock()
	if pending == 0 && len(uris) == 0 {
		return false
	}
	var b []byte
	if s.at.cr {
		// The upstream's last line ended in "\r"; a "\n" that may still
		// follow would then be a blank line after this event, which
		// dispatches nothing.
		b = append(b, '\n')
	}
	for i, m := range listMethods {
		if pending&(1<<i) != 0 {
			b = append(b, frame(m, "", s.f.SubscriptionID)...)
		}
	}
	for _, u := range uris {
		b = append(b, frame(MethodResourcesUpdated, u, s.f.SubscriptionID)...)
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return false
	}
	s.at.feed(b)
	for i, m := range listMethods {
		if pending&(1<<i) != 0 {
			s.count(m, false)
		}
	}
	for range uris {
		s.count(MethodResourcesUpdated, false)
	}
	return true
}

// count reports one notification to Options.Count.
func (s *Stream) count(method string, coalesced bool) {
	if c := s.hub.opts.Count; c != nil {
		c(method, coalesced)
	}
}

// Write passes upstream bytes to the client, then anything pending when they
// ended an event.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.at.feed(p[:n])
	if err != nil {
		s.err = err
		return n, err
	}
	if s.armed && n > 0 && s.at.between() {
		s.armed, s.acked = false, true
	}
	s.writePending()
	return n, s.err
}

// Flush calls the flush function under the stream's lock.
func (s *Stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flush != nil && !s.closed {
		s.flush()
	}
}

// MarkAcked tells a modern stream that the next event the relay writes is
// its acknowledgement: the sidecar's notifications may follow it, never
// precede it.
func (s *Stream) MarkAcked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.acked {
		s.armed = true
	}
}

// WriteEvent writes one whole event of the sidecar's own (an
// acknowledgement it composed), at a boundary; the stream counts as
// acknowledged after it.
func (s *Stream) WriteEvent(ev []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if !s.at.between() {
		return io.ErrShortWrite
	}
	if _, err := s.w.Write(ev); err != nil {
		s.err = err
		return err
	}
	s.at.feed(ev)
	s.acked = true
	s.writePending()
	if s.flush != nil {
		s.flush()
	}
	return s.err
}

// Close unregisters the stream; nothing is written to it afterwards. It
// waits for a write in progress.
func (s *Stream) Close() {
	if s == nil {
		return
	}
	s.hub.remove(s)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
