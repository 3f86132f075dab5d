package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// lockedBuf is a writer the test can read while the stream writes.
type lockedBuf struct {
	mu    sync.Mutex
	b     bytes.Buffer
	block chan struct{} // when set, each write waits for it
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	if l.block != nil {
		<-l.block
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testwait.For(t, time.Minute, cond, "the condition")
}

// TestBoundary: between is true exactly at the start and after a blank
// line, whatever the line ends, and however the bytes are split.
func TestBoundary(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want bool
	}{
		{"", true},
		{"data: x", false},
		{"data: x\n", false},
		{"data: x\n\n", true},
		{"data: x\r\n\r\n", true},
		{"data: x\r\r", true},
		{"data: x\r\n", false},
		{": keep-alive\n\n", true},
		{"id: 1\ndata: a\n\nevent: message\n", false},
		{"id: 1\ndata: a\n\nevent: message\ndata: b\n\n", true},
		{"\n", true},
	}
	for _, tc := range cases {
		for split := 0; split <= len(tc.in); split++ {
			var b boundary
			b.feed([]byte(tc.in[:split]))
			b.feed([]byte(tc.in[split:]))
			if got := b.between(); got != tc.want {
				t.Errorf("between after %q (split at %d) = %v, want %v", tc.in, split, got, tc.want)
			}
		}
	}
}

// events splits an SSE text into its events by blank lines ("\n" ends only).
func events(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n")
}

// TestInsertAtBoundary: a notification published mid-event waits for the
// event's end; one published between events goes out at once; neither has
// an id: line, and the upstream's events stay intact.
func TestInsertAtBoundary(t *testing.T) {
	t.Parallel()
	h := New(Options{})
	var out lockedBuf
	s, _ := h.Open(Filter{Session: "s1", ResourcesListChanged: true, AgentsListChanged: true}, &out, nil)
	defer s.Close()
	_, _ = s.Write([]byte("id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n"))
	h.Publish(catalog.Changes{Skills: true})
	time.Sleep(20 * time.Millisecond) // the inserter runs and must wait
	if strings.Contains(out.String(), "list_changed") {
		t.Fatalf("inserted inside an event: %q", out.String())
	}
	_, _ = s.Write([]byte("\n"))
	want := "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n"
	if got := out.String(); got != want {
		t.Fatalf("stream = %q, want %q", got, want)
	}
	h.Publish(catalog.Changes{Agents: true})
	want += "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/agents/list_changed\"}\n\n"
	waitFor(t, func() bool { return out.String() == want })
}

// TestCoalesce: while a client reads nothing, repeated changes leave one
// notification of each kind pending, and Publish never waits for it.
func TestCoalesce(t *testing.T) {
	t.Parallel()
	h := New(Options{})
	out := &lockedBuf{block: make(chan struct{})}
	s, _ := h.Open(Filter{Session: "s1", ResourcesListChanged: true}, out, nil)
	defer s.Close()
	done := make(chan struct{})
	go func() {
		for range 100 {
			h.Publish(catalog.Changes{Skills: true})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a stalled client")
	}
	close(out.block)
	want := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n"
	waitFor(t, func() bool { return out.String() != "" })
	time.Sleep(20 * time.Millisecond)
	if got := out.String(); got != want && got != want+want {
		t.Fatalf("stream = %q, want one list_changed (two at most: one already taken when the rest came)", got)
	}
}

// TestFilters: a legacy stream gets resources/updated only for its own
// session's subscriptions; a modern one only what its filter names, with
// its subscription id, and only after its acknowledgement.
func TestFilters(t *testing.T) {
	t.Parallel()
	h := New(Options{})
	var a, b, m lockedBuf
	sa, _ := h.Open(Filter{Session: "A"}, &a, nil)
	sb, _ := h.Open(Filter{Session: "B"}, &b, nil)
	sm, _ := h.Open(Filter{URIs: []string{"skill://x/SKILL.md"}, AgentsListChanged: true, SubscriptionID: json.RawMessage(`"listen-1"`)}, &m, nil)
	defer sa.Close()
	defer sb.Close()
	defer sm.Close()
	if err := h.Subscribe("A", "skill://x/SKILL.md", caller.ID{}); err != nil {
		t.Fatal(err)
	}
	h.Publish(catalog.Changes{Skills: true, Agents: true, Files: []string{"skill://x/SKILL.md", "skill://y/SKILL.md"}})
	wantA := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}\n\n"
	waitFor(t, func() bool { return a.String() == wantA })
	time.Sleep(20 * time.Millisecond)
	if got := b.String(); got != "" {
		t.Errorf("session B, which subscribed to nothing and asked for no list_changed, got %q", got)
	}
	if got := m.String(); got != "" {
		t.Fatalf("modern stream got %q before its acknowledgement", got)
	}
	sm.MarkAcked()
	ack := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{}}\n\n"
	_, _ = sm.Write([]byte(ack))
	wantM := ack +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/agents/list_changed\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"listen-1\"}}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"listen-1\"},\"uri\":\"skill://x/SKILL.md\"}}\n\n"
	if got := m.String(); got != wantM {
		t.Fatalf("modern stream = %q\nwant %q", got, wantM)
	}
	for _, ev := range events(a.String() + m.String()) {
		if strings.HasPrefix(ev, "id:") || strings.Contains(ev, "\nid:") {
			t.Errorf("an inserted event has an id: line: %q", ev)
		}
	}
}

// TestBounds: streams and subscriptions past their bounds are refused, and
// a closed stream frees its place and gets nothing more.
func TestBounds(t *testing.T) {
	t.Parallel()
	h := New(Options{MaxStreams: 2, MaxStreamsPerSession: 1, MaxSessions: 1, MaxSubscriptions: 1})
	var w lockedBuf
	s1, _ := h.Open(Filter{Session: "A"}, &w, nil)
	if s, _ := h.Open(Filter{Session: "A"}, &w, nil); s != nil {
		t.Error("a second stream of session A was registered past MaxStreamsPerSession 1")
	}
	s2, _ := h.Open(Filter{Session: "B"}, &w, nil)
	if s1 == nil || s2 == nil {
		t.Fatal("streams within bounds refused")
	}
	if s, _ := h.Open(Filter{Session: "C"}, &w, nil); s != nil {
		t.Error("a third stream registered past MaxStreams 2")
	}
	s1.Close()
	s1.Close() // twice is harmless
	if got := h.Streams(); got != 1 {
		t.Errorf("Streams() = %d after a Close, want 1", got)
	}
	h.Publish(catalog.Changes{Skills: true})
	if err := h.Subscribe("A", "u1", caller.ID{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Subscribe("A", "u2", caller.ID{}); err == nil {
		t.Error("a second URI subscribed past MaxSubscriptions 1")
	}
	// At MaxSessions, a session with no stream open (A's was closed: a
	// client gone without DELETE) gives up its place (found in review:
	// such sessions kept their places for ever, and past 4096 of them no
	// session could subscribe).
	if err := h.Subscribe("B", "u1", caller.ID{}); err != nil {
		t.Errorf("B subscribing past MaxSessions 1 while A has no stream: %v, want A's place", err)
	}
	// B streams (s2): nothing is taken from it.
	if err := h.Subscribe("C", "u1", caller.ID{}); err == nil {
		t.Error("C subscribed past MaxSessions 1 while the session holding the place streams")
	}
	h.Forget("B")
	if err := h.Subscribe("C", "u1", caller.ID{}); err != nil {
		t.Errorf("Subscribe after Forget freed the place: %v", err)
	}
	var nilHub *Hub
	if s, _ := nilHub.Open(Filter{}, &w, nil); s != nil {
		t.Error("a nil Hub opened a stream")
	}
	nilHub.Publish(catalog.Changes{Skills: true})
}

// FuzzBoundary: however the bytes of a stream are split, the state after
// them is the same, and an event written at a boundary ends at one.
func FuzzBoundary(f *testing.F) {
	for _, s := range []string{"data: x\n\n", "data: x\r\n\r\n", "data: x\r\r", "id: 1\ndata: a\n", ":\n\n\r", "\r\n\r"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		var whole, parts boundary
		whole.feed(b)
		k := int(cut) % (len(b) + 1)
		parts.feed(b[:k])
		parts.feed(b[k:])
		if whole != parts {
			t.Fatalf("state after %q whole %+v, split at %d %+v", b, whole, k, parts)
		}
		if whole.between() {
			whole.feed(frame(MethodResourcesListChanged, "", nil))
			if !whole.between() {
				t.Fatalf("a whole event after %q did not end at a boundary", b)
			}
		}
	})
}

// TestCount: Options.Count hears of each notification written and of each
// one folded into one already pending, while the stream is mid-event.
func TestCount(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]int{}
	h := New(Options{Count: func(method string, coalesced bool) {
		mu.Lock()
		defer mu.Unlock()
		got[fmt.Sprintf("%s %v", method, coalesced)]++
	}})
	var w lockedBuf
	s, _ := h.Open(Filter{Session: "A", ResourcesListChanged: true}, &w, nil)
	defer s.Close()
	if err := h.Subscribe("A", "skill://x/a.md", caller.ID{}); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Write([]byte("data: {\"upstream\":")) // an event left open: nothing may be inserted
	change := catalog.Changes{Skills: true, Agents: true, Files: []string{"skill://x/a.md", "skill://x/b.md"}}
	h.Publish(change)
	h.Publish(change)
	_, _ = s.Write([]byte("1}\n\n"))
	want := map[string]int{
		MethodResourcesListChanged + " false": 1, MethodResourcesListChanged + " true": 1,
		MethodResourcesUpdated + " false": 1, MethodResourcesUpdated + " true": 1,
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counted %v, want %v (agents: not asked for; b.md: not subscribed)", got, want)
	}
	if n := strings.Count(w.String(), MethodResourcesListChanged); n != 1 {
		t.Errorf("stream carries %d list_changed, want 1: %q", n, w.String())
	}
}

// TestIdleSubscriptionsMakeRoom: at MaxSessions, the session whose
// subscriptions were used least recently, among those with no stream open,
// loses them; the others keep theirs and are still told of their URIs.
func TestIdleSubscriptionsMakeRoom(t *testing.T) {
	t.Parallel()
	h := New(Options{MaxSessions: 2})
	for _, sub := range [][2]string{{"A", "skill://a/SKILL.md"}, {"B", "skill://b/SKILL.md"}, {"A", "skill://a/x.md"}} {
		if err := h.Subscribe(sub[0], sub[1], caller.ID{}); err != nil {
			t.Fatal(err)
		}
	}
	// B is now the least recently used: C takes its place, not A's.
	if err := h.Subscribe("C", "skill://c/SKILL.md", caller.ID{}); err != nil {
		t.Fatalf("C past MaxSessions 2 with two idle sessions: %v", err)
	}
	var a, b lockedBuf
	sa, _ := h.Open(Filter{Session: "A"}, &a, nil)
	sb, _ := h.Open(Filter{Session: "B"}, &b, nil)
	defer sa.Close()
	defer sb.Close()
	h.Publish(catalog.Changes{Files: []string{"skill://a/SKILL.md", "skill://b/SKILL.md"}})
	wantA := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"skill://a/SKILL.md\"}}\n\n"
	waitFor(t, func() bool { return a.String() == wantA })
	if got := b.String(); got != "" {
		t.Errorf("B, whose subscriptions made room for C's, got %q", got)
	}
	// Every session with subscriptions now streams or is C: with A and B
	// streaming, only C (idle) can give way.
	if err := h.Subscribe("B", "skill://b/SKILL.md", caller.ID{}); err != nil {
		t.Fatalf("B again, C idle: %v", err)
	}
	if err := h.Subscribe("D", "skill://d/SKILL.md", caller.ID{}); err == nil {
		t.Error("D subscribed while every session holding a place streams")
	}
}

// TestPromptsToolsListChanged: a skill change sends prompts and tools
// list_changed to the streams that ask for them (host compatibility); an
// agents-only change sends prompts list_changed alone (agents are prompts
// too, never tools).
func TestPromptsToolsListChanged(t *testing.T) {
	t.Parallel()
	h := New(Options{})
	var both, none lockedBuf
	sb, _ := h.Open(Filter{Session: "A", PromptsListChanged: true, ToolsListChanged: true}, &both, nil)
	sn, _ := h.Open(Filter{Session: "B", ResourcesListChanged: true}, &none, nil)
	defer sb.Close()
	defer sn.Close()
	prompts := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\n\n"
	h.Publish(catalog.Changes{Agents: true})
	waitFor(t, func() bool { return both.String() == prompts })
	h.Publish(catalog.Changes{Skills: true})
	want := prompts + prompts + "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	waitFor(t, func() bool { return both.String() == want })
	waitFor(t, func() bool { return none.String() != "" })
	if got := none.String(); strings.Contains(got, "prompts/") || strings.Contains(got, "tools/") {
		t.Errorf("a stream that did not ask got %q", got)
	}
}

// TestSubscriptionsAllBound: the subscriptions of all sessions together
// are bounded (MaxSubscriptionsAll), not only each session's and the
// number of sessions, whose product allowed a million URIs of up to
// 8 KiB each. Past the bound the least recently used idle session other
// than the subscriber's gives way; with none, the subscription is
// refused. Unsubscribe and Forget give places back.
func TestSubscriptionsAllBound(t *testing.T) {
	t.Parallel()
	h := New(Options{MaxSubscriptionsAll: 3})
	sub := func(sid, uri string) error { return h.Subscribe(sid, "skill://"+uri+"/SKILL.md", caller.ID{}) }
	for _, s := range [][2]string{{"A", "a1"}, {"A", "a2"}, {"B", "b1"}, {"A", "a2"}} {
		if err := sub(s[0], s[1]); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
	}
	// Three held: B is the least recently used (A subscribed a2 again).
	if err := sub("C", "c1"); err != nil {
		t.Fatalf("C past the bound with B idle: %v", err)
	}
	var b lockedBuf
	sb, _ := h.Open(Filter{Session: "B"}, &b, nil)
	defer sb.Close()
	if err := sub("B", "b1"); err != nil {
		t.Fatalf("B again: %v", err)
	}
	// A (2) and B (1) held, B streams: C's second makes A give way, never
	// C itself.
	if err := sub("C", "c2"); err != nil {
		t.Fatalf("C's second with A idle: %v", err)
	}
	var c lockedBuf
	sc, _ := h.Open(Filter{Session: "C"}, &c, nil)
	defer sc.Close()
	// B (1) and C (2) held, both streaming: nothing can give way.
	if err := sub("D", "d1"); err == nil {
		t.Error("D subscribed past the bound while every session holding one streams")
	}
	if err := sub("C", "c3"); err == nil {
		t.Error("C's third subscribed past the bound while every other session streams")
	}
	h.Unsubscribe("C", "skill://c2/SKILL.md")
	if err := sub("D", "d1"); err != nil {
		t.Fatalf("D after an unsubscribe gave a place back: %v", err)
	}
	h.Forget("B")
	if err := sub("D", "d2"); err != nil {
		t.Fatalf("D after B was forgotten: %v", err)
	}
	h.Publish(catalog.Changes{Files: []string{"skill://c1/SKILL.md", "skill://c2/SKILL.md"}})
	want := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"skill://c1/SKILL.md\"}}\n\n"
	waitFor(t, func() bool { return c.String() == want })
}

// callerAt is the caller the zero Resolver makes of a client at addr.
func callerAt(addr string) caller.ID {
	return (*caller.Resolver)(nil).Of(&http.Request{RemoteAddr: addr + ":1", Header: http.Header{}})
}

// TestCallerShares: one caller holds at most its share of the
// subscriptions of all sessions and of the streams, and others still get
// places (found in review: one client could subscribe 4096 URIs over its
// own sessions, or open 4096 streams, and leave no other any).
func TestCallerShares(t *testing.T) {
	t.Parallel()
	h := New(Options{MaxSubscriptionsAll: 8, MaxStreams: 8, SharePercent: 25}) // a share of 2
	a, b := callerAt("192.0.2.1"), callerAt("192.0.2.2")
	sub := func(sid, uri string, who caller.ID) error { return h.Subscribe(sid, "skill://"+uri+"/SKILL.md", who) }
	isShare := func(err error, table string) bool {
		var r *caller.Refusal
		return errors.As(err, &r) && !r.Full && r.Table == table && r.Reason() == "caller_share_exhausted"
	}

	// Streams: A opens two, its share; a third is refused, B's is not.
	var a1, w lockedBuf
	s1, _ := h.Open(Filter{Session: "A1", Caller: a}, &a1, nil)
	s2, _ := h.Open(Filter{Session: "A2", Caller: a}, &w, nil)
	if s1 == nil || s2 == nil {
		t.Fatal("A's streams within its share refused")
	}
	defer s2.Close()
	if s, _ := h.Open(Filter{Session: "A5", Caller: a}, &w, nil); s != nil {
		t.Error("A's third stream registered past its share of 2")
	}
	sb, _ := h.Open(Filter{Session: "B1", Caller: b}, &w, nil)
	if sb == nil {
		t.Fatal("B's stream refused while A holds its share")
	}
	defer sb.Close()

	// Subscriptions: A1 and A2 stream, so neither gives its place up.
	if err := sub("A1", "a1", a); err != nil {
		t.Fatal(err)
	}
	if err := sub("A2", "a2", a); err != nil {
		t.Fatal(err)
	}
	if err := sub("A1", "a3", a); !isShare(err, "notify_subscriptions") {
		t.Fatalf("A's third subscription: %v, want a share refusal of notify_subscriptions", err)
	}
	if err := sub("A3", "a3", a); !isShare(err, "notify_subscriptions") {
		t.Fatalf("A3 past A's share, every own session streaming: %v, want a share refusal", err)
	}
	if err := sub("B1", "b1", b); err != nil {
		t.Fatalf("B refused while A holds its share: %v", err)
	}
	if err := sub("B2", "b2", b); err != nil {
		t.Fatalf("B's second refused: %v", err)
	}
	h.Unsubscribe("A2", "skill://a2/SKILL.md")
	if err := sub("A3", "a3", a); err != nil {
		t.Fatalf("A3 after an unsubscribe gave A a place back: %v", err)
	}
	// A at its share again: its own idle session (A3) gives way, not B2
	// (idle, but B's), nor A1 (streaming).
	if err := sub("A4", "a4", a); err != nil {
		t.Fatalf("A4 with A's own A3 idle: %v", err)
	}
	// B at its share: its own idle B2 gives way.
	if err := sub("B3", "b3", b); err != nil {
		t.Fatalf("B's third with B's own B2 idle: %v", err)
	}
	h.Publish(catalog.Changes{Files: []string{"skill://a1/SKILL.md"}})
	want := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"skill://a1/SKILL.md\"}}\n\n"
	waitFor(t, func() bool { return a1.String() == want })

	// A stream closed gives its place back.
	s1.Close()
	s5, _ := h.Open(Filter{Session: "A5", Caller: a}, &w, nil)
	if s5 == nil {
		t.Fatal("A's stream refused after one of its two closed")
	}
	s5.Close()
}

// TestStreamsFullCounted: a stream refused because the streams table is
// full is counted as that table's full refusal in caller_refusals_total,
// as docs/security.md promises of every shared table, and one refused over
// its caller's share as a share refusal (found in review: the hub's own
// bound refused first, uncounted, so refusal="full" of notify_streams
// never moved).
func TestStreamsFullCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := New(Options{MaxStreams: 4, SharePercent: 50, Metrics: metrics.New(reg, "test")}) // a share of 2
	var w lockedBuf
	for i, addr := range []string{"192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.2"} {
		s, _ := h.Open(Filter{Session: fmt.Sprint("S", i), Caller: callerAt(addr)}, &w, nil)
		if s == nil {
			t.Fatalf("stream %d of 4, within its caller's share, refused", i+1)
		}
		defer s.Close()
	}
	s, err := h.Open(Filter{Session: "S4", Caller: callerAt("192.0.2.3")}, &w, nil)
	if s != nil {
		t.Fatal("a fifth stream registered past MaxStreams 4")
	}
	// The refusal is the table's, for a stream the sidecar serves alone
	// to answer with: HTTP 503, notify_streams_exhausted, data.table.
	var r *caller.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("a fifth stream past MaxStreams 4: %v, want a *caller.Refusal", err)
	}
	if e := r.Reply(); e.Status != 503 || e.RetryAfter != 0 || !cmp.Equal(e.Data, map[string]string{"reason": "notify_streams_exhausted", "table": TableStreams}) {
		t.Errorf("a fifth stream past MaxStreams 4: HTTP %d Retry-After %d data %v, want 503 without Retry-After, notify_streams_exhausted of %s", e.Status, e.RetryAfter, e.Data, TableStreams)
	}
	if s, _ := h.Open(Filter{Session: "S5", Caller: callerAt("192.0.2.3")}, &w, nil); s != nil {
		t.Fatal("a sixth stream registered past MaxStreams 4")
	}
	for refusal, want := range map[string]float64{"full": 2, "share": 0} {
		if got := metricstest.Refusals(t, reg, TableStreams, refusal); got != want {
			t.Errorf("caller_refusals_total{table=%s,refusal=%s} = %v, want %v", TableStreams, refusal, got, want)
		}
	}
}

// TestSessionStreamsCounted: a legacy session's stream past its own
// MaxStreamsPerSession is refused as the other sessions' own bounds are
// (caller.SessionBound: 503, data.table notify_session_streams), and
// counted as that table's full refusal in caller_refusals_total, as every
// other refused stream is counted under notify_streams; notify_streams
// counts nothing, since no caller was refused a place of it.
func TestSessionStreamsCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := New(Options{MaxStreamsPerSession: 1, Metrics: metrics.New(reg, "test")})
	var w lockedBuf
	s, _ := h.Open(Filter{Session: "A", Caller: callerAt("192.0.2.1")}, &w, nil)
	if s == nil {
		t.Fatal("session A's first stream refused")
	}
	defer s.Close()
	s2, err := h.Open(Filter{Session: "A", Caller: callerAt("192.0.2.2")}, &w, nil)
	if s2 != nil {
		t.Fatal("a second stream of session A registered past MaxStreamsPerSession 1")
	}
	var r *caller.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("a second stream of session A: %v, want a *caller.Refusal", err)
	}
	if e := r.Reply(); e.Status != 503 || e.RetryAfter != 0 || !cmp.Equal(e.Data, map[string]string{"reason": "notify_session_streams_exhausted", "table": "notify_session_streams"}) {
		t.Errorf("a second stream of session A: HTTP %d Retry-After %d data %v, want 503 without Retry-After, notify_session_streams_exhausted of notify_session_streams", e.Status, e.RetryAfter, e.Data)
	}
	for _, c := range []struct {
		table, refusal string
		want           float64
	}{
		{"notify_session_streams", "full", 1},
		{"notify_session_streams", "share", 0},
		{TableStreams, "full", 0},
		{TableStreams, "share", 0},
	} {
		if got := metricstest.Refusals(t, reg, c.table, c.refusal); got != c.want {
			t.Errorf("caller_refusals_total{table=%s,refusal=%s} = %v, want %v", c.table, c.refusal, got, c.want)
		}
	}
}
