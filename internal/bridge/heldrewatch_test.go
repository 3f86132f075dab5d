package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// endingGETs is a go-sdk server's front that ends the GET stream now
// attached when the test says (as a server, or a proxy before it, may end
// a stream while its session lives on: 2025-11-25 basic/transports), and
// holds every later GET until the test releases it. It records each GET's
// Last-Event-ID.
type endingGETs struct {
	next     http.Handler
	attached chan int      // the number of a GET once go-sdk has flushed its head
	arrived  chan int      // the number of a GET as it comes, before it is held
	release  chan struct{} // closed: later GETs go on to go-sdk
	mu       sync.Mutex
	n        int
	lastIDs  []string // each GET's Last-Event-ID, "-" for none
	end      context.CancelFunc
}

func newEndingGETs(next http.Handler) *endingGETs {
	return &endingGETs{next: next, attached: make(chan int, 16), arrived: make(chan int, 16), release: make(chan struct{})}
}

func (e *endingGETs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		e.next.ServeHTTP(w, r)
		return
	}
	last := "-"
	if v, ok := r.Header["Last-Event-Id"]; ok {
		last = v[0]
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	e.mu.Lock()
	e.n++
	n := e.n
	e.lastIDs = append(e.lastIDs, last)
	e.mu.Unlock()
	e.arrived <- n
	if n > 1 {
		select {
		case <-e.release:
		case <-r.Context().Done():
			return
		}
	}
	e.mu.Lock()
	e.end = cancel
	e.mu.Unlock()
	e.next.ServeHTTP(&attachedWriter{ResponseWriter: w, attached: func() { e.attached <- n }}, r.WithContext(ctx))
}

// endStream ends the GET stream attached now: go-sdk's handler returns,
// and the response ends as a complete one, the session still open.
func (e *endingGETs) endStream() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.end()
}

func (e *endingGETs) lastEventIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.lastIDs...)
}

// attachedWriter tells once that go-sdk flushed the stream's head (it
// flushes the standalone stream's head at once, and is then attached to
// it: what the server sends on the stream from then on goes there).
type attachedWriter struct {
	http.ResponseWriter
	once     sync.Once
	attached func()
}

func (w *attachedWriter) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	w.once.Do(w.attached)
}

// standaloneAppends is go-sdk's memory event store, telling each message
// stored for a session's standalone stream (stream id "").
type standaloneAppends struct {
	*mcp.MemoryEventStore
	stored chan struct{}
}

func (s *standaloneAppends) Append(ctx context.Context, session, stream string, data []byte) error {
	err := s.MemoryEventStore.Append(ctx, session, stream, data)
	if stream == "" {
		s.stored <- struct{}{}
	}
	return err
}

// recv is the next value on c, or the test's failure after a hang guard.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(20 * time.Second): // a hang guard only
		t.Fatalf("%s: nothing after 20s", what)
		panic("unreachable")
	}
}

// A held session whose GET stream the upstream ends while the session
// lives on is watched again: the client MAY open a GET stream at any time
// (2025-11-25 basic/transports), and a server's ping has nowhere else to
// go. The bridge opens a new one, resuming with Last-Event-ID when the
// server gave its events ids (basic/transports, resumability), so a ping
// the server sent while no stream was open is delivered and answered, and
// a call waiting for the client's input is still there for the retry.
func TestHeldSessionRewatchesEndedStream(t *testing.T) {
	for _, resumable := range []bool{false, true} {
		name := "no event ids"
		if resumable {
			name = "event ids"
		}
		t.Run(name, func(t *testing.T) {
			sessions := make(chan *mcp.ServerSession, 4)
			s := mcp.NewServer(&mcp.Implementation{Name: "ender", Version: "1"}, &mcp.ServerOptions{
				InitializedHandler: func(_ context.Context, r *mcp.InitializedRequest) { sessions <- r.Session }})
			s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
				if err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: el.Action + " " + el.Content["name"].(string)}}}, nil
			})
			var opts *mcp.StreamableHTTPOptions
			store := &standaloneAppends{MemoryEventStore: mcp.NewMemoryEventStore(nil), stored: make(chan struct{}, 16)}
			if resumable {
				opts = &mcp.StreamableHTTPOptions{EventStore: store}
			}
			up := newEndingGETs(testupstream.Handler(s, opts))
			srv := httptest.NewServer(up)
			t.Cleanup(srv.Close)
			var releaseOnce sync.Once
			releaseGETs := func() { releaseOnce.Do(func() { close(up.release) }) }
			t.Cleanup(releaseGETs) // before srv.Close, which waits for every handler
			bt := &Transport{Next: srv.Client().Transport, Credentials: []string{"Authorization"},
				Eras: func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} }}
			ctx, shutdown := context.WithCancel(context.Background())
			t.Cleanup(shutdown)
			bt.Start(ctx)
			caps := `{"elicitation":{}}`

			r := modernCall(t, bt, srv.URL, "", "1", "ask", caps, "")
			key := oneRequest(t, r, "elicitation/create")
			ss := recv(t, sessions, "the held session's initialized")
			if n := recv(t, up.attached, "the held session's first GET stream"); n != 1 {
				t.Fatalf("GET %d attached first", n)
			}
			<-up.arrived
			ping := func(what string) {
				t.Helper()
				pctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard only
				defer cancel()
				if err := ss.Ping(pctx, nil); err != nil {
					t.Fatalf("%s: the server's ping on the held session: %v", what, err)
				}
			}
			ping("first stream")
			if resumable {
				<-store.stored
			}

			up.endStream()
			if n := recv(t, up.arrived, "a new GET after the upstream ended the held session's stream"); n != 2 {
				t.Fatalf("GET %d came second", n)
			}
			if resumable {
				// The server pings while no stream is open: the ping is
				// stored, and the resumed stream delivers it.
				done := make(chan error, 1)
				go func() {
					pctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard only
					defer cancel()
					done <- ss.Ping(pctx, nil)
				}()
				<-store.stored
				releaseGETs()
				if err := recv(t, done, "the ping sent between the streams"); err != nil {
					t.Fatalf("the ping sent between the streams: %v", err)
				}
			} else {
				releaseGETs()
				recv(t, up.attached, "the second GET stream attached")
				ping("second stream")
			}
			ids := up.lastEventIDs()
			want := "-"
			if resumable {
				want = "_0" // go-sdk's id of the standalone stream's first event
			}
			if len(ids) != 2 || ids[0] != "-" || ids[1] != want {
				t.Errorf("the GETs' Last-Event-ID: %q, want [- %s] (- for none)", ids, want)
			}

			r = modernCall(t, bt, srv.URL, "", "2", "ask", caps, retry(key, r.Result.RequestState, `{"action":"accept","content":{"name":"octocat"}}`))
			if r.Error != nil {
				t.Fatalf("retry: error %d %s, want the tool's result", r.Error.Code, r.Error.Data)
			}
			if len(r.Result.Content) != 1 || r.Result.Content[0].Text != "accept octocat" {
				t.Fatalf("retry: %+v, want the tool's result", r.Result)
			}
			select {
			case <-sessions:
				t.Error("the upstream saw a second session opened, want the one held")
			default:
			}
		})
	}
}

// getAnswers serves a legacy server's POSTs and DELETEs and answers every
// GET itself with answer(n) for the n-th, recording each GET's
// Last-Event-ID and counting the client's responses posted (pongs).
type getAnswers struct {
	next   http.Handler
	answer func(w http.ResponseWriter, n int)
	mu     sync.Mutex
	ids    []string // each GET's Last-Event-ID, "-" for none
	pongs  int
}

func (g *getAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		last := "-"
		if v, ok := r.Header["Last-Event-Id"]; ok {
			last = v[0]
		}
		g.mu.Lock()
		g.ids = append(g.ids, last)
		n := len(g.ids)
		g.mu.Unlock()
		g.answer(w, n)
	case http.MethodPost:
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if m, err := rewrite.ParseMessage(b); err == nil && m.Kind == rewrite.KindResponse {
			g.mu.Lock()
			g.pongs++
			g.mu.Unlock()
		}
		g.next.ServeHTTP(w, r)
	default:
		g.next.ServeHTTP(w, r)
	}
}

// sse starts an event stream on w and writes body, then the handler
// returns: the stream ends.
func sse(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, body)
}

// A held session's GET stream is opened anew only as far as it is worth
// it: an upstream that ends every stream at once, or fails it, is asked
// at most maxRewatch times more in a row (a stream that brought a message
// starts the count again), with a backoff between; one that offers no
// stream (405, or a reply that is not an event stream) or forgot the
// session (404) is not asked again. The upstream counts the GETs; the
// backoff is the test's (none), and watch tells when it stops.
func TestHeldSessionRewatchBounded(t *testing.T) {
	const more = maxRewatch
	ping := func(n int) string {
		return `data: {"jsonrpc":"2.0","id":"p` + strconv.Itoa(n) + `","method":"ping"}` + "\n\n"
	}
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, n int)
		gets   int
		why    string
		ids    []string // the GETs' Last-Event-ID when checked
		pongs  int
	}{
		{name: "ended at once", answer: func(w http.ResponseWriter, _ int) { sse(w, ": ok\n\n") }, gets: 1 + more, why: watchQuiet},
		{name: "refused 500", answer: func(w http.ResponseWriter, _ int) { http.Error(w, "no", http.StatusInternalServerError) }, gets: 1 + more, why: watchQuiet},
		{name: "an id, no message", answer: func(w http.ResponseWriter, n int) { sse(w, "id: e"+strconv.Itoa(n)+"\ndata:\n\n") }, gets: 1 + more, why: watchQuiet,
			ids: []string{"-", "e1", "e2", "e3"}},
		{name: "a ping each, then 405", answer: func(w http.ResponseWriter, n int) {
			if n > 2*more {
				http.Error(w, "no GET", http.StatusMethodNotAllowed)
				return
			}
			sse(w, "id: e"+strconv.Itoa(n)+"\n"+ping(n))
		}, gets: 2*more + 1, why: watchNoStream, pongs: 2 * more},
		{name: "resumption refused", answer: func(w http.ResponseWriter, n int) {
			switch n {
			case 1:
				sse(w, "id: e1\ndata:\n\n")
			case 2:
				http.Error(w, "failed to replay events", http.StatusBadRequest)
			default:
				http.Error(w, "no GET", http.StatusMethodNotAllowed)
			}
		}, gets: 3, why: watchNoStream, ids: []string{"-", "e1", "-"}},
		{name: "405", answer: func(w http.ResponseWriter, _ int) { http.Error(w, "no GET", http.StatusMethodNotAllowed) }, gets: 1, why: watchNoStream},
		{name: "JSON", answer: func(w http.ResponseWriter, _ int) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{}`)
		}, gets: 1, why: watchNoStream},
		{name: "404", answer: func(w http.ResponseWriter, _ int) { http.Error(w, "session not found", http.StatusNotFound) }, gets: 1, why: watchForgotten},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "held", Version: "1"}, nil)
			s.AddTool(&mcp.Tool{Name: "hi", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
			})
			up := &getAnswers{next: testupstream.Handler(s, nil), answer: c.answer}
			srv := httptest.NewServer(up)
			t.Cleanup(srv.Close)
			ended := make(chan string, 1)
			var delays []int
			bt := &Transport{Next: srv.Client().Transport, Credentials: []string{"Authorization"},
				Eras:  func() Eras { return Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}} },
				hooks: watchHooks{delay: func(quiet int) time.Duration { delays = append(delays, quiet); return 0 }, ended: func(why string) { ended <- why }}}
			ctx, shutdown := context.WithCancel(context.Background())
			t.Cleanup(shutdown)
			bt.Start(ctx)
			if r := modernCall(t, bt, srv.URL, "", "1", "hi", `{}`, ""); r.Error != nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "hi" {
				t.Fatalf("tools/call = %+v %+v, want hi", r.Error, r.Result)
			}
			if why := recv(t, ended, "the held session's watch to stop"); why != c.why {
				t.Errorf("the watch stopped: %s, want %s", why, c.why)
			}
			up.mu.Lock()
			defer up.mu.Unlock()
			if len(up.ids) != c.gets {
				t.Errorf("the upstream got %d GETs, want %d", len(up.ids), c.gets)
			}
			if c.ids != nil && !slices.Equal(up.ids, c.ids) {
				t.Errorf("the GETs' Last-Event-ID: %q, want %q", up.ids, c.ids)
			}
			if up.pongs != c.pongs {
				t.Errorf("the upstream got %d answers to its pings, want %d", up.pongs, c.pongs)
			}
			// The backoff grows with each quiet stream in a row.
			for i, q := range delays {
				if c.pongs == 0 && q != i+1 {
					t.Errorf("backoff asked for %v, want 1, 2, … in a row", delays)
					break
				}
			}
		})
	}
}

// The backoff between new streams after quiet ones: the first at once,
// then one interval, doubling.
func TestRewatchDelay(t *testing.T) {
	want := []time.Duration{0, 0, rewatchInterval, 2 * rewatchInterval, 4 * rewatchInterval}
	for quiet, w := range want {
		if got := rewatchDelay(quiet); got != w {
			t.Errorf("rewatchDelay(%d) = %v, want %v", quiet, got, w)
		}
	}
}
