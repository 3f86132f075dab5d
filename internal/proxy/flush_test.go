package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// arrivals is an upstream body as package hop's looks to copyBody: each
// Read returns one event of what has arrived, Buffered says how much more
// has, and when nothing has, Read waits for the next arrival on more.
type arrivals struct {
	events []string // arrived, not read yet
	more   chan []string
}

func (a *arrivals) Read(p []byte) (int, error) {
	if len(a.events) == 0 {
		next, ok := <-a.more
		if !ok {
			return 0, io.EOF
		}
		a.events = append([]string(nil), next...) // not the sender's slice
	}
	n := copy(p, a.events[0])
	if a.events[0] = a.events[0][n:]; a.events[0] == "" {
		a.events = a.events[1:]
	}
	return n, nil
}

func (a *arrivals) Close() error { return nil }

func (a *arrivals) Buffered() int {
	n := 0
	for _, e := range a.events {
		n += len(e)
	}
	return n
}

// flushes records what a client is sent at each flush.
type flushes struct {
	*httptest.ResponseRecorder
	sent    []string
	flushed chan string
	off     int
}

func (f *flushes) Flush() {
	b := f.Body.String()[f.off:]
	f.off += len(b)
	f.sent = append(f.sent, b)
	if f.flushed != nil {
		f.flushed <- b
	}
}

func event(i int) string {
	return "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":" + strings.Repeat("1", i+1) + "}}\n\n"
}

// TestCopyBodyWritesABurstOnce: events that arrived together leave in one
// write and one flush, in order.
func TestCopyBodyWritesABurstOnce(t *testing.T) {
	t.Parallel()
	burst := []string{event(0), event(1), event(2), event(3)}
	more := make(chan []string, 1)
	more <- burst
	close(more)
	w := &flushes{ResponseRecorder: httptest.NewRecorder()}
	if err := copyBody(w, &arrivals{more: more}, nil, eachRead, newBufferPool()); err != nil {
		t.Fatal(err)
	}
	if len(w.sent) != 1 || w.sent[0] != strings.Join(burst, "") {
		t.Errorf("flushed %q, want the burst in one flush", w.sent)
	}
}

// TestCopyBodyFlushesBeforeWaiting: an event is sent to the client before
// the relay waits for the upstream's next one, alone or at the end of a
// burst.
func TestCopyBodyFlushesBeforeWaiting(t *testing.T) {
	t.Parallel()
	more := make(chan []string)
	w := &flushes{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan string, 4)}
	done := make(chan error, 1)
	go func() { done <- copyBody(w, &arrivals{more: more}, nil, eachRead, newBufferPool()) }()
	for _, arrived := range [][]string{{event(0)}, {event(1), event(2)}, {event(3)}} {
		more <- arrived
		select {
		case got := <-w.flushed:
			if want := strings.Join(arrived, ""); got != want {
				t.Fatalf("flushed %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second): // a hang guard, not a timing
			t.Fatalf("%q not flushed while the upstream waits", arrived)
		}
	}
	close(more)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// endless is an upstream that always has more buffered: a fast upstream
// and a client that reads slower, until limit bytes.
type endless struct{ left int }

func (e *endless) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	n := min(len(p), e.left)
	copy(p, bytes.Repeat([]byte("x"), n))
	e.left -= n
	return n, nil
}

func (e *endless) Buffered() int { return e.left }

// writes records the size of each write.
type writes struct {
	http.ResponseWriter
	max, count int
}

func (w *writes) Write(p []byte) (int, error) {
	w.max, w.count = max(w.max, len(p)), w.count+1
	return len(p), nil
}

func (w *writes) Flush() {}

// TestCopyBodyHoldsAtMostOneBuffer: however much the upstream has ready,
// the relay holds at most its 32 KiB buffer of it for the client.
func TestCopyBodyHoldsAtMostOneBuffer(t *testing.T) {
	t.Parallel()
	w := &writes{ResponseWriter: httptest.NewRecorder()}
	const total = 1 << 20
	if err := copyBody(w, &endless{left: total}, nil, eachRead, newBufferPool()); err != nil {
		t.Fatal(err)
	}
	if w.max > 32<<10 || w.count < total/(32<<10) {
		t.Errorf("%d writes of at most %d bytes, want none over 32 KiB", w.count, w.max)
	}
}

// TestCopyBodyThroughTheHooks: through the wrappers the response hooks
// put on an SSE reply (the observer's tap, the resource-change watcher), a
// burst still leaves in one flush, and the observer, the watcher and the
// client each see every event, in order.
func TestCopyBodyThroughTheHooks(t *testing.T) {
	t.Parallel()
	updated := func(uri string) string {
		return "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"" + uri + "\"}}\n\n"
	}
	burst := []string{event(0), updated("a"), event(1), updated("b")}
	later := []string{updated("c"), event(2)}
	more := make(chan []string, 2)
	more <- burst
	more <- later
	close(more)
	obs := &seen{}
	var fired []string
	body := &watchBody{ReadCloser: newSSETap(&arrivals{more: more}, obs),
		fire: func(_ *http.Request, _, uri string) { fired = append(fired, uri) }}
	w := &flushes{ResponseRecorder: httptest.NewRecorder()}
	if err := copyBody(w, body, nil, eachRead, newBufferPool()); err != nil {
		t.Fatal(err)
	}
	_ = body.Close()
	if want := []string{strings.Join(burst, ""), strings.Join(later, "")}; !slices.Equal(w.sent, want) {
		t.Errorf("flushed %q, want %q", w.sent, want)
	}
	var want []string
	for _, e := range append(burst, later...) {
		want = append(want, strings.TrimSuffix(strings.TrimPrefix(e, "data: "), "\n\n"))
	}
	if !slices.Equal(obs.msgs, want) || obs.clean == nil || !*obs.clean {
		t.Errorf("observer saw %q (clean %v), want %q", obs.msgs, obs.clean, want)
	}
	if !slices.Equal(fired, []string{"a", "b", "c"}) {
		t.Errorf("watcher fired for %q, want a, b, c", fired)
	}
}

// endsWithData is an upstream body whose last read brings the end with
// the last bytes, as net/http's chunked reader does when the last chunk
// came in the same segment as the event before it.
type endsWithData struct{ left string }

func (e *endsWithData) Read(p []byte) (int, error) {
	n := copy(p, e.left)
	if e.left = e.left[n:]; e.left == "" {
		return n, io.EOF
	}
	return n, nil
}

func (e *endsWithData) Buffered() int { return len(e.left) }

// TestCopyBodyLeavesTheLastReadToTheEnd: a POST's reply whose end came with
// its last event is not flushed before the handler ends (the server then
// sends the event and the end of the reply in one write); a stream whose
// writer goes on after the copy (a GET stream with the sidecar's own
// events, a listen stream) is flushed as before.
func TestCopyBodyLeavesTheLastReadToTheEnd(t *testing.T) {
	t.Parallel()
	whole := event(0) + event(1)
	for _, tc := range []struct {
		fl   flushing
		want []string
	}{
		{eachReadButLast, nil},
		{eachRead, []string{whole}},
	} {
		w := &flushes{ResponseRecorder: httptest.NewRecorder()}
		if err := copyBody(w, &endsWithData{left: whole}, nil, tc.fl, newBufferPool()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w.sent, tc.want) || w.Body.String() != whole {
			t.Errorf("flushing %d: flushed %q, wrote %q; want flushes %q and the whole reply", tc.fl, w.sent, w.Body.String(), tc.want)
		}
	}
	// An end that comes later leaves the event flushed while the relay
	// waits for it.
	more := make(chan []string, 1)
	more <- []string{event(0)}
	close(more)
	w := &flushes{ResponseRecorder: httptest.NewRecorder()}
	if err := copyBody(w, &arrivals{more: more}, nil, eachReadButLast, newBufferPool()); err != nil {
		t.Fatal(err)
	}
	if want := []string{event(0)}; !slices.Equal(w.sent, want) {
		t.Errorf("an end that came later: flushed %q, want %q", w.sent, want)
	}
}
