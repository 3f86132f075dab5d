package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// liveSessions wraps a legacy go-sdk server and tracks the sessions alive
// on it: minted by an initialize reply, ended by DELETE.
type liveSessions struct {
	next http.Handler
	mu   sync.Mutex
	live map[string]bool
	max  int
}

type sidWriter struct {
	http.ResponseWriter
	l *liveSessions
}

func (w sidWriter) Write(b []byte) (int, error) {
	w.note()
	return w.ResponseWriter.Write(b)
}

func (w sidWriter) WriteHeader(code int) {
	w.note()
	w.ResponseWriter.WriteHeader(code)
}

func (w sidWriter) note() {
	if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
		w.l.mu.Lock()
		if !w.l.live[sid] {
			w.l.live[sid] = true
			if len(w.l.live) > w.l.max {
				w.l.max = len(w.l.live)
			}
		}
		w.l.mu.Unlock()
	}
}

func (w sidWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (l *liveSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		l.mu.Lock()
		delete(l.live, r.Header.Get("Mcp-Session-Id"))
		l.mu.Unlock()
	}
	l.next.ServeHTTP(sidWriter{w, l}, r)
}

func (l *liveSessions) peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}

func slowServer(started chan<- struct{}, release <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow done"}}}, nil
	})
	return s
}

// MaxSessions "caps the sessions held, listen streams' included" (found
// in review: listens were counted against it in one direction only): with
// MaxSessions 1, an open subscriptions/listen and a held session for a
// call must never be two legacy sessions alive on the upstream at once.
func TestListenCountsTowardMaxSessions(t *testing.T) {
	s := slowServer(make(chan struct{}, 1), nil)
	live := &liveSessions{next: testupstream.Handler(s, nil), live: map[string]bool{}}
	bt, u := newBridge(t, live, 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + fmt.Sprintf(testMeta, "{}") + `}}`
	req := modernPost(ctx, u, "subscriptions/listen", body)
	resp, err := roundTrip(bt, req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("listen: %v %v", resp, err)
	}
	defer resp.Body.Close()
	go io.Copy(io.Discard, resp.Body)

	// The listen's session is open once RoundTrip returns; it is busy for
	// as long as its stream, so nothing makes room for another.
	code, out := call(t, bt, u, "Bearer b", "{}", "tools/list")
	if code != http.StatusServiceUnavailable || !strings.Contains(out, "bridge_sessions_exhausted") {
		t.Errorf("tools/list with the listen open and MaxSessions 1 = %d %.200s, want 503 bridge_sessions_exhausted", code, out)
	}
	if p := live.peak(); p > 1 {
		t.Errorf("%d legacy sessions alive on the upstream at once, want at most MaxSessions = 1", p)
	}
}

// Eviction of the least recently used session must not end another
// caller's call in flight (found in review): caller A's slow tools/call
// must still get its result when caller B's request finds the holder at
// MaxSessions, and B is refused meanwhile.
func TestEvictionSparesCallsInFlight(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	s := slowServer(started, release)
	live := &liveSessions{next: testupstream.Handler(s, nil), live: map[string]bool{}}
	bt, u := newBridge(t, live, 1)

	done := make(chan string, 1)
	go func() { done <- rawCall(bt, u, "Bearer a", "tools/call", `"name":"slow","arguments":{},`) }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("slow tool never started")
	}
	// Another caller, with its own credentials: the one session held is
	// busy, so it is refused, not made room for.
	if code, body := call(t, bt, u, "Bearer b", "{}", "tools/list"); code != http.StatusServiceUnavailable || !strings.Contains(body, "bridge_sessions_exhausted") {
		t.Errorf("caller B tools/list while A's call runs = %d %.200s, want 503 bridge_sessions_exhausted", code, body)
	}
	close(release)
	select {
	case r := <-done:
		if !strings.Contains(r, "slow done") {
			t.Errorf("caller A's tools/call in flight = %q, want its result \"slow done\": caller B's session evicted A's and ended its call", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("caller A's call never returned")
	}
	// A's session is idle now: B's takes its place.
	if code, body := call(t, bt, u, "Bearer b", "{}", "tools/list"); code != 200 {
		t.Errorf("caller B tools/list once A's call ended = %d %.200s, want 200", code, body)
	}
}

// rawCall posts a modern request and returns the reply's body, or the error.
func rawCall(bt *Transport, u, auth, method, params string) string {
	body := `{"jsonrpc":"2.0","id":"c1","method":"` + method + `","params":{` + params + fmt.Sprintf(testMeta, "{}") + `}}`
	req := modernPost(context.Background(), u, method, body)
	req.Header.Set("Mcp-Name", "slow")
	req.Header.Set("Authorization", auth)
	resp, err := roundTrip(bt, req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return fmt.Sprintf("status %d ct %s body %s err %v", resp.StatusCode, resp.Header.Get("Content-Type"), b, err)
}

// Two modern clients of one authorization context (one token, two agents)
// share the held legacy session; both number their requests from 1, as
// every client does. Each must get the answer to its own call (found in
// review: the second got -32600 "duplicate in-flight request ID").
func TestSameIDsOnASharedSession(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	gate := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(2)
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		arrived.Done()
		select {
		case <-gate:
		case <-time.After(3 * time.Second):
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + a.Text}}}, nil, nil
	})
	bt, u := newBridge(t, testupstream.Handler(s, nil), 0)
	// Open the session first so both calls go on the one session.
	if code, body := call(t, bt, u, "Bearer same", "{}", "tools/list"); code != 200 {
		t.Fatalf("tools/list: %d %s", code, body)
	}
	out := make([]string, 2)
	var wg sync.WaitGroup
	for i, text := range []string{"first-agent", "second-agent"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = rawCall(bt, u, "Bearer same", "tools/call", `"name":"slow","arguments":{"text":"`+text+`"},`)
		}()
	}
	go func() { arrived.Wait(); close(gate) }()
	wg.Wait()
	for i, text := range []string{"first-agent", "second-agent"} {
		if !strings.Contains(out[i], "echo "+text) {
			t.Errorf("client %d (text %s) got %q, want its own result", i, text, out[i])
		}
	}
}

// cancellableServer is a legacy go-sdk server whose tool slow reports its
// start and whether its call was cancelled (it runs 5 s otherwise).
func cancellableServer() (s *mcp.Server, started, cancelled chan struct{}) {
	started, cancelled = make(chan struct{}, 1), make(chan struct{})
	s = mcp.NewServer(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			close(cancelled)
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
			return &mcp.CallToolResult{}, nil
		}
	})
	return s, started, cancelled
}

// On the 2026-07-28 wire a client cancels a request by closing its
// stream; a legacy server reads a dropped stream as no cancellation
// (2025-11-25: the client sends notifications/cancelled). A modern client
// that gives up on a call must stop the legacy server's work on it (found
// in review: nothing told the legacy server).
func TestClosedStreamCancelsLegacyCall(t *testing.T) {
	s, started, cancelled := cancellableServer()
	bt, u := newBridge(t, testupstream.Handler(s, nil), 0)
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{},` + fmt.Sprintf(testMeta, "{}") + `}}`
	req := modernPost(ctx, u, "tools/call", body)
	req.Header.Set("Mcp-Name", "slow")
	go func() {
		if resp, err := roundTrip(bt, req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	cancel() // the modern client closes its stream: it cancels the call
	select {
	case <-cancelled:
	case <-time.After(3 * time.Second):
		t.Error("the legacy server's tool still runs 3s after the modern client cancelled its call (no notifications/cancelled sent)")
	}
}

// The same with the go-sdk v1.8.0 client as the modern client: it cancels
// CallTool by its context, as its docs say.
func TestGoSDKCancelReachesLegacyServer(t *testing.T) {
	s, started, cancelled := cancellableServer()
	inner := testupstream.Handler(s, nil)
	bt, u := newBridge(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		t.Logf("upstream got %s %.160s", r.Method, b)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		inner.ServeHTTP(w, r)
	}), 0)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "m", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: bt}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Logf("negotiated %s", cs.InitializeResult().ProtocolVersion)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	t.Logf("CallTool: %v", err)
	select {
	case <-cancelled:
	case <-time.After(3 * time.Second):
		t.Error("the legacy server's tool still runs 3s after the go-sdk modern client cancelled CallTool")
	}
}

// Idle held sessions are evictable (LRU), and a listen makes room by
// closing them as a call does (found in review: they refused every listen,
// so one caller's calls with a few capability sets left no other caller a
// subscriptions/listen stream until the idle timeout, 5 min).
func TestListenEvictsIdleSessions(t *testing.T) {
	s := slowServer(make(chan struct{}, 1), nil)
	bt, u := newBridge(t, testupstream.Handler(s, nil), 2)
	for _, caps := range []string{`{}`, `{"x":{}}`} { // caller B, two capability sets, then idle
		if code, body := call(t, bt, u, "Bearer b", caps, "tools/list"); code != 200 {
			t.Fatalf("tools/list: %d %s", code, body)
		}
	}
	body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + fmt.Sprintf(testMeta, "{}") + `}}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := modernPost(ctx, u, "subscriptions/listen", body)
	req.Header.Set("Authorization", "Bearer a")
	resp, err := roundTrip(bt, req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b := make([]byte, 300)
		n, _ := resp.Body.Read(b)
		t.Errorf("caller A's subscriptions/listen: HTTP %d %s, want 200 (caller B's idle sessions could be evicted)", resp.StatusCode, b[:n])
	}
}

// One legacy session must not take every GET stream the front serves
// (found in review): a session's streams are capped below the front's,
// so another session still gets one, and the front's own cap still holds
// past it. Both bounds are set before the front starts, which builds its
// tables from them.
func TestFrontStreamsPerSession(t *testing.T) {
	fx := newFrontFixtureWith(t, 0, func(h http.Handler) http.Handler { return h }, func(f *LegacyFront) {
		f.MaxStreams, f.MaxSessionStreams = 3, 2
	})
	sid := func() string {
		resp, body := post(t, fx.url, legacyInit, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	a, b := sid(), sid()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// get opens a GET stream of session s and returns its status and, for
	// a refusal, its data.table.
	get := func(s string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fx.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", s)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode == 200 {
			return 200, ""
		}
		var e struct {
			Error struct {
				Data struct{ Table string } `json:"data"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error.Data.Table
	}
	for i := range 2 {
		if code, _ := get(a); code != 200 {
			t.Fatalf("session A GET %d: %d", i, code)
		}
	}
	if code, table := get(a); code != http.StatusServiceUnavailable || table != "bridge_session_streams" {
		t.Errorf("session A's third GET stream: HTTP %d data.table %q, want 503 bridge_session_streams (two per session)", code, table)
	}
	if code, table := get(b); code != 200 {
		t.Errorf("session B's first GET stream: HTTP %d data.table %q, want 200: session A holds every GET stream the front serves", code, table)
	}
	if code, table := get(b); code != http.StatusServiceUnavailable || table != "bridge_streams" {
		t.Errorf("session B's second GET stream, the front's fourth: HTTP %d data.table %q, want 503 bridge_streams (three in all)", code, table)
	}
}

// A legacy client cancels with notifications/cancelled and keeps its
// stream; the modern upstream's cancellation is the request's stream
// closed (2026-07-28 Streamable HTTP: the server MUST treat a disconnect
// as cancellation). The front must close it (found alongside the review's
// cancellation finding: the notification was accepted and dropped). The
// judge is the upstream's own HTTP request ending: go-sdk v1.8.0's
// stateless server does not cancel a tool when its client disconnects.
func TestFrontCancelReachesModernServer(t *testing.T) {
	fx, h, call, closed := slowCallFront(t)
	call(context.Background(), 5)
	// Another id cancels nothing.
	if resp, body := post(t, fx.url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`, h); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s, want 202", resp.StatusCode, body)
	}
	select {
	case <-closed:
		t.Fatal("a cancellation of request 6 closed request 5's stream")
	case <-time.After(100 * time.Millisecond):
	}
	if resp, body := post(t, fx.url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}`, h); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s, want 202", resp.StatusCode, body)
	}
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Error("the upstream's request for the call is still open 3s after the legacy client cancelled it")
	}
}

// A legacy client that goes away in the middle of a call leaves nobody to
// take its reply: the front closes the modern upstream's stream, the
// modern wire's cancellation, as it did before a call had a context of
// its own (package slotctx's, which watches the client's).
func TestFrontClientLeavingReachesModernServer(t *testing.T) {
	_, _, call, closed := slowCallFront(t)
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	call(ctx, 5)
	select {
	case <-closed:
		t.Fatal("the upstream's request ended while the client waited")
	case <-time.After(100 * time.Millisecond):
	}
	leave()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Error("the upstream's request for the call is still open 3s after the legacy client left")
	}
}

// slowCallFront is a front before a modern server with a tool "slow" that
// runs until the test ends, and a session minted on it (h, its headers).
// call starts a legacy tools/call of "slow" under id in the session, made
// under ctx, and returns once it has reached the upstream; closed says
// that its HTTP request there ended. The judge is the upstream's own HTTP
// request ending: go-sdk v1.8.0's stateless server does not cancel a tool
// when its client disconnects.
func slowCallFront(t *testing.T) (fx *frontFixture, h map[string]string, call func(ctx context.Context, id int), closed chan struct{}) {
	t.Helper()
	started := make(chan struct{}, 1)
	closed = make(chan struct{})
	fx = newFrontFixtureWith(t, 0, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			if strings.Contains(string(b), `"tools/call"`) {
				started <- struct{}{}
				go func() {
					select {
					case <-r.Context().Done():
						close(closed)
					case <-time.After(10 * time.Second):
					}
				}()
			}
			next.ServeHTTP(w, r)
		})
	})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fx.server.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return &mcp.CallToolResult{}, nil
	})
	resp, body := post(t, fx.url, legacyInit, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	h = map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"}
	call = func(ctx context.Context, id int) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fx.url, strings.NewReader(`{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the call never reached the upstream")
		}
	}
	return fx, h, call, closed
}

// modernPost is a 2026-07-28 POST of body (a method request) to u.
func modernPost(ctx context.Context, u, method, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	return req
}

// A listen whose legacy session the upstream has forgotten (its GET
// answered 404) ends after the acknowledgement, so the client listens
// anew, instead of being held until it leaves (suspected in review; only a
// 405, no GET stream offered, means nothing will ever come and is held).
func TestListenEndsWhenItsSessionIsGone(t *testing.T) {
	for status, want := range map[int]string{
		// Gone: the stream ends with no answer, and the client listens anew.
		http.StatusNotFound: "",
		// Refused otherwise (review: a client reconnecting would loop):
		// the listen is answered with an error.
		http.StatusInternalServerError: "upstream_refused_stream",
	} {
		t.Run(strconv.Itoa(status), func(t *testing.T) { listenEnds(t, status, want) })
	}
}

func listenEnds(t *testing.T, status int, want string) {
	s := slowServer(make(chan struct{}, 1), nil)
	inner := testupstream.Handler(s, nil)
	bt, u := newBridge(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no stream", status)
			return
		}
		inner.ServeHTTP(w, r)
	}), 0)
	body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + fmt.Sprintf(testMeta, "{}") + `}}`
	resp, err := roundTrip(bt, modernPost(t.Context(), u, "subscriptions/listen", body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("listen: %v %v", resp, err)
	}
	defer resp.Body.Close()
	done := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, `"l1"`) {
			t.Errorf("listen stream %q, want the acknowledgement first", got)
		}
		if want != "" && !strings.Contains(got, want) || want == "" && strings.Contains(got, `"error"`) {
			t.Errorf("listen stream %q: want an error %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the listen stream is still open 5s after the upstream answered its GET %d", status)
	}
}

// An upstream that lies: on a call's reply stream it answers a request
// nobody on that stream asked (another id) before the call's own answer.
// Only the call's answer reaches the client, with the client's id
// (suspected in review: the stray answer was passed through).
func TestStrayAnswerDropped(t *testing.T) {
	sse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"initialize"`) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			fmt.Fprint(w, initReply(b, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}`))
			return
		}
		var in struct{ ID json.RawMessage }
		if json.Unmarshal(b, &in) != nil || in.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"forged\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[{\"name\":\"real\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n", in.ID)
	})
	bt, u := newBridge(t, sse, 0)
	code, body := call(t, bt, u, "", "{}", "tools/list")
	if code != 200 || !strings.Contains(body, `"real"`) || strings.Contains(body, `"forged"`) || strings.Count(body, `"id":1`) != 1 {
		t.Errorf("tools/list = %d %s, want only the call's own answer, with the client's id 1", code, body)
	}
}

// One caller cannot take every held session with listens (noticed in
// review once listens counted against MaxSessions): past its share of the
// listens its next listen is refused 429 with Retry-After, whatever
// capabilities it claims, and another caller still gets one.
func TestListensPerCaller(t *testing.T) {
	s := slowServer(make(chan struct{}, 1), nil)
	bt, u := newBridge(t, testupstream.Handler(s, nil), 0)
	listen := func(auth string, i int) *http.Response {
		caps := fmt.Sprintf(`{"x%d":{}}`, i) // a new capability set each time
		body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + fmt.Sprintf(testMeta, caps) + `}}`
		req := modernPost(t.Context(), u, "subscriptions/listen", body)
		req.Header.Set("Authorization", auth)
		resp, err := roundTrip(bt, req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	share := bt.h.listens.Share()
	for i := range share {
		if r := listen("Bearer a", i); r.StatusCode != 200 {
			t.Fatalf("listen %d of caller A: %d", i, r.StatusCode)
		}
	}
	if r := listen("Bearer a", 99); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Errorf("caller A's listen past its share %d: %d (Retry-After %q), want 429 caller_share_exhausted with Retry-After", share, r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := listen("Bearer b", 0); r.StatusCode != 200 {
		t.Errorf("caller B's first listen: %d, want 200", r.StatusCode)
	}
}

// A caller cannot escape the listen cap by varying what it may claim about
// itself (found in review: X-Forwarded-For, which the proxy keeps from the
// client, was part of the key), and listens together never take the
// places bridged calls need: with MaxSessions 4, at most 2 listens, one
// each (a share of 2 is 1), and another caller's call still gets a session.
func TestListensLeaveRoomForCalls(t *testing.T) {
	s := slowServer(make(chan struct{}, 1), nil)
	bt, u := newBridge(t, testupstream.Handler(s, nil), 4)
	listen := func(auth, forwarded string) int {
		body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + fmt.Sprintf(testMeta, "{}") + `}}`
		req := modernPost(t.Context(), u, "subscriptions/listen", body)
		req.Header.Set("Authorization", auth)
		req.Header.Set("X-Forwarded-For", forwarded)
		resp, err := roundTrip(bt, req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode
	}
	got := 0
	for i := range 6 {
		if listen("Bearer a", fmt.Sprintf("10.0.0.%d", i)) == 200 {
			got++
		}
	}
	if got != 1 {
		t.Errorf("caller A varying X-Forwarded-For held %d listens with MaxSessions 4, want 1 (its share of half)", got)
	}
	if code := listen("Bearer c", "10.9.9.9"); code != 200 {
		t.Errorf("caller C's first listen: %d, want 200", code)
	}
	if code := listen("Bearer d", "10.9.9.8"); code != http.StatusServiceUnavailable {
		t.Errorf("caller D's listen with listens at half the places: %d, want 503", code)
	}
	if code, out := call(t, bt, u, "Bearer b", "{}", "tools/list"); code != 200 {
		t.Errorf("caller B's tools/list with listens at their bound: %d %.160s, want 200", code, out)
	}
}

// A call whose client has already gone never reaches the upstream: its
// context is done before it is sent, as a context.WithCancel child of the
// client's was (found in review: the first slotctx call context learnt of
// a parent done already on another goroutine, and some calls went out).
func TestFrontCallOfAClientGoneIsNotSent(t *testing.T) {
	var calls atomic.Int32
	fx := newFrontFixtureWith(t, 0, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Method") == "tools/call" {
				calls.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	})
	resp, body := post(t, fx.url, legacyInit, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	gone, leave := context.WithCancel(context.Background())
	leave()
	for i := range 50 {
		req, _ := http.NewRequestWithContext(gone, http.MethodPost, fx.front.Upstream.String(),
			strings.NewReader(`{"jsonrpc":"2.0","id":`+strconv.Itoa(i+2)+`,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.RemoteAddr = "127.0.0.1:1"
		if resp, err := fx.front.RoundTrip(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	time.Sleep(100 * time.Millisecond) // a call that went out reaches the counter
	if n := calls.Load(); n != 0 {
		t.Errorf("%d of 50 calls of a client gone reached the upstream, want 0", n)
	}
}
