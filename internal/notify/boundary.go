package notify

// boundary follows an SSE byte stream just far enough to know whether it is
// between two events: at the start, or right after a blank line. Line ends
// are "\n", "\r\n" or "\r" (WHATWG HTML §9.2.5). It buffers nothing.
type boundary struct {
	midLine bool // the last byte was part of a line's content
	lineEnd bool // the last complete line was not blank: an event is open
	cr      bool // the last byte was "\r": a "\n" next belongs to it
}

// feed moves the state over b.
func (s *boundary) feed(b []byte) {
	for _, c := range b {
		if s.cr && c == '\n' {
			s.cr = false
			continue // the rest of a "\r\n"
		}
		s.cr = false
		switch c {
		case '\r', '\n':
			// A line end: a blank line closes the open event; the end of a
			// non-blank line leaves it open.
			s.lineEnd = s.midLine
			s.midLine = false
			s.cr = c == '\r'
		default:
			s.midLine = true
		}
	}
}

// between reports whether the stream is between events, so a whole event
// may be written next.
func (s *boundary) between() bool { return !s.midLine && !s.lineEnd }
