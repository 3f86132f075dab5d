package main

import (
	"sync"
	"time"
)

// maxEvents bounds the error events kept for the restart-window check.
const maxEvents = 100000

// MethodStats counts how the requests of one method ended.
type MethodStats struct {
	Sent      int `json:"sent"`
	Results   int `json:"results"`
	Errors    int `json:"errors"`
	Transport int `json:"transport_errors"`
	NoReply   int `json:"ended_without_result_or_error"`
}

// ErrorEvent is one request that did not end with a result, with when it
// started and ended.
type ErrorEvent struct {
	Method     string
	Kind       string
	Class      Class
	Start, End time.Time
}

// Stats collects what the clients saw. The zero value is not usable; use
// NewStats.
type Stats struct {
	mu       sync.Mutex
	start    time.Time
	methods  map[string]*MethodStats
	errors   map[string]int
	events   []ErrorEvent
	dropped  int
	noReply  []string
	perSec   []int // results by second since start
	walks    WalkStats
	streams  StreamStats
	sessions SessionStats
	wrong    int
}

// WalkStats counts skills/list walks from the first page to the last.
type WalkStats struct {
	Complete int `json:"complete"`
	// Inconsistent walks saw a skill twice or missed one.
	Inconsistent int `json:"inconsistent"`
	// Incomplete walks stopped at a page that was not a result.
	Incomplete int `json:"incomplete"`
	Pages      int `json:"pages"`
	// MixedPages held skills of more than one plugin revision: one page
	// comes from one snapshot, and a snapshot is built from one revision.
	MixedPages int `json:"mixed_revision_pages"`
}

// StreamStats counts long-lived GET streams.
type StreamStats struct {
	Opened int `json:"opened"`
	// HeldFull streams stayed open until the client closed them.
	HeldFull int `json:"held_full"`
	// EndedEarly streams ended before the client closed them, cleanly or
	// cut off (as when the upstream dies).
	EndedEarly int `json:"ended_early"`
}

// SessionStats counts legacy sessions.
type SessionStats struct {
	Opened int `json:"opened"`
	// Reinitialized counts sessions opened again after a 404 (session gone).
	Reinitialized int `json:"reinitialized_after_404"`
	Deleted       int `json:"deleted"`
}

// NewStats starts collecting; times are bucketed by second from now.
func NewStats() *Stats {
	return &Stats{start: time.Now(), methods: map[string]*MethodStats{}, errors: map[string]int{}}
}

// Record counts one request of method that ran from start to end.
func (s *Stats) Record(method string, o Outcome, start, end time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.methods[method]
	if m == nil {
		m = &MethodStats{}
		s.methods[method] = m
	}
	m.Sent++
	switch o.Class {
	case ClassResult:
		m.Results++
		sec := int(end.Sub(s.start) / time.Second)
		for len(s.perSec) <= sec {
			s.perSec = append(s.perSec, 0)
		}
		s.perSec[sec]++
		return
	case ClassError:
		m.Errors++
	case ClassTransport:
		m.Transport++
	case ClassNoReply:
		m.NoReply++
	}
	s.errors[method+": "+o.Kind]++
	s.event(ErrorEvent{Method: method, Kind: o.Kind, Class: o.Class, Start: start, End: end})
}

func (s *Stats) event(ev ErrorEvent) {
	if len(s.events) >= maxEvents {
		s.dropped++
		return
	}
	s.events = append(s.events, ev)
}

// NoReplySample keeps the first few bodies that were neither a result nor
// an error, for the report.
func (s *Stats) NoReplySample(method string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.noReply) < 5 {
		if len(body) > 300 {
			body = append(body[:300:300], "…"...)
		}
		s.noReply = append(s.noReply, method+": "+string(body))
	}
}

// StreamEnded counts a GET stream's end; early ones are also error events.
func (s *Stats) StreamEnded(early bool, kind string, start, end time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !early {
		s.streams.HeldFull++
		return
	}
	s.streams.EndedEarly++
	s.errors["GET stream: ended early: "+kind]++
	s.event(ErrorEvent{Method: "GET stream", Kind: "ended early: " + kind, Class: ClassTransport, Start: start, End: end})
}

// Walked counts one skills/list walk of pages pages; complete says it
// reached the last page, consistent that it saw every skill exactly once.
func (s *Stats) Walked(pages int, complete, consistent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.walks.Pages += pages
	switch {
	case !complete:
		s.walks.Incomplete++
	case !consistent:
		s.walks.Inconsistent++
	default:
		s.walks.Complete++
	}
}

// MixedPage counts a skills/list page with skills of several revisions.
func (s *Stats) MixedPage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.walks.MixedPages++
}

// StreamOpened counts a GET stream that started.
func (s *Stats) StreamOpened() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams.Opened++
}

// SessionOpened counts a session; again says it replaced one the server
// had forgotten.
func (s *Stats) SessionOpened(again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions.Opened++
	if again {
		s.sessions.Reinitialized++
	}
}

// SessionDeleted counts a DELETE that ended the session.
func (s *Stats) SessionDeleted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions.Deleted++
}

// WrongContent counts a result whose content was not what was asked for.
func (s *Stats) WrongContent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wrong++
}

// ClientSummary is what the clients saw, for the report.
type ClientSummary struct {
	Requests map[string]MethodStats `json:"requests"`
	Errors   map[string]int         `json:"errors"`
	// Total is every request sent; Results those that ended in a result.
	Total        int          `json:"total"`
	Results      int          `json:"results"`
	NoReply      int          `json:"ended_without_result_or_error"`
	Hung         int          `json:"hung_past_client_timeout"`
	WrongContent int          `json:"wrong_content"`
	NoReplyBody  []string     `json:"ended_without_result_or_error_samples,omitempty"`
	Walks        WalkStats    `json:"skills_list_walks"`
	Streams      StreamStats  `json:"get_streams"`
	Sessions     SessionStats `json:"sessions"`
	// ResultsPerSecond is results by second since the load started.
	ResultsPerSecond []int `json:"results_per_second"`
	// EventsDropped counts error events past the bound kept.
	EventsDropped int `json:"events_dropped,omitempty"`
}

// Summary returns the counts so far, and the error events.
func (s *Stats) Summary() (ClientSummary, []ErrorEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := ClientSummary{Requests: map[string]MethodStats{}, Errors: map[string]int{}, Walks: s.walks,
		Streams: s.streams, Sessions: s.sessions, WrongContent: s.wrong, EventsDropped: s.dropped,
		NoReplyBody: append([]string(nil), s.noReply...), ResultsPerSecond: append([]int(nil), s.perSec...)}
	for k, m := range s.methods {
		c.Requests[k] = *m
		c.Total += m.Sent
		c.Results += m.Results
		c.NoReply += m.NoReply
	}
	for k, v := range s.errors {
		c.Errors[k] = v
	}
	for _, ev := range s.events {
		if ev.Class == ClassTransport && isTimeout(ev.Kind) {
			c.Hung++
		}
	}
	return c, append([]ErrorEvent(nil), s.events...)
}

// ResultsAfter counts the results in the whole seconds (since the stats
// started) that begin after t.
func (s *Stats) ResultsAfter(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := int(t.Sub(s.start)/time.Second) + 1; i < len(s.perSec); i++ {
		if i >= 0 {
			n += s.perSec[i]
		}
	}
	return n
}

func isTimeout(kind string) bool {
	const suffix = ": timeout"
	return len(kind) >= len(suffix) && kind[len(kind)-len(suffix):] == suffix
}

// Window is a span of time, such as the upstream's restart and the few
// seconds after it in which clients notice.
type Window struct {
	From, To time.Time
}

// Outside counts by "method: kind" the events that do not overlap any of
// the windows, sorted keys first.
func Outside(events []ErrorEvent, windows []Window) map[string]int {
	out := map[string]int{}
	for _, ev := range events {
		inside := false
		for _, w := range windows {
			if !ev.End.Before(w.From) && !ev.Start.After(w.To) {
				inside = true
				break
			}
		}
		if !inside {
			out[ev.Method+": "+ev.Kind]++
		}
	}
	return out
}
