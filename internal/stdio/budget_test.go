package stdio

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// TestQueuedBytesBoundedPerCaller: what the sidecar holds for one caller
// that does not read its streams is bounded across all its calls, not
// only per stream: its share of the budget of queued bytes (a quarter of
// 256 KiB here), whatever the number of its calls. A message past it is
// dropped and counted as past a queue's own bound; a reply past it is
// replaced by the refusal, so the caller learns what was lost. Another
// caller is served meanwhile, a large reply included, and every byte
// counted is given back once the streams are read.
func TestQueuedBytesBoundedPerCaller(t *testing.T) {
	t.Parallel()
	const budget, share, calls = 256 << 10, 64 << 10, 8
	tr, m := start(t, "modern", func(tr *Transport) {
		tr.MaxLine = floodMaxLine
		tr.Caller = callersByAuthorization
		tr.MaxQueued = budget
	})
	a, b := as("a"), as("b")
	var streams []*http.Response
	for i := range calls {
		req := sseRequest(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"tools/call","params":{"name":"flood","arguments":{"count":32,"size":16384},`+
			`"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
		for k, v := range a {
			req.Header[k] = v
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		streams = append(streams, resp)
	}
	waitFor(t, "every flood's reply to be routed", func() bool { return sharedBusy(tr) == 0 })
	big := map[string]any{"text": strings.Repeat("y", 60<<10)}
	if e := do(t, tr, "POST", "", toolCall(20, "echo", big), b); len(text(e.last())) != 60<<10 {
		t.Errorf("another caller's large reply while a does not read = %d %.200v", e.status, e.msgs)
	}
	e := do(t, tr, "POST", "", toolCall(21, "echo", big), a)
	if d := errorData(e.last()); d["reason"] != "caller_share_exhausted" || d["table"] != TableQueuedBytes || e.last()["id"] != float64(21) {
		t.Errorf("a's large reply past its share of queued bytes = %d %.300v, want the refusal (caller_share_exhausted in %s, id 21)", e.status, e.msgs, TableQueuedBytes)
	}
	held := 0
	for i, resp := range streams {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var last map[string]any
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				held += len(d)
				last = decode(t, []byte(d))
			}
		}
		if text(last) != "flooded" && reason(last) != "caller_share_exhausted" {
			t.Errorf("stream %d ended with %.300v, want the reply or the refusal", i, last)
		}
	}
	// What a held: at most its share, or one message when it held nothing,
	// and the refusals standing for replies (a few hundred bytes each).
	if most := max(share, floodSize+512) + calls*512; held > most {
		t.Errorf("a caller that did not read was held %d bytes over %d calls, want at most %d (its share of %d)", held, calls, most, budget)
	}
	if n := m.refused(TableQueuedBytes, "share"); n == 0 {
		t.Errorf("no refusal counted in %s", TableQueuedBytes)
	}
	waitFor(t, "every byte given back", func() bool { return tr.queued.Len() == 0 })
}

// TestBudget: the rule of the budget of queued bytes, as caller.Table's
// for places: a caller past its share is refused (429), anyone past the
// whole budget is (503, first); a caller holding nothing takes any one
// message, and so does an empty budget, as an empty queue does; each
// refusal is counted; what is given back makes room again.
func TestBudget(t *testing.T) {
	var counted []bool
	b := newBudget(100, 25, func(full bool) { counted = append(counted, full) })
	a, c, d := caller.ID{}, callerID(t, "c"), callerID(t, "d")
	steps := []struct {
		who        caller.ID
		n          int
		want       string // "" taken, else the refusal's reason
		held, left int
	}{
		{a, 20, "", 20, 20},
		{a, 5, "", 25, 25},
		{a, 1, "caller_share_exhausted", 25, 25},
		{c, 60, "", 60, 85}, // holding nothing: any one message
		{c, 1, "caller_share_exhausted", 60, 85},
		{d, 20, "stdio_queued_bytes_exhausted", 0, 85}, // the whole budget first
		{d, 15, "", 15, 100},
	}
	for i, s := range steps {
		r := b.take(s.who, s.n)
		got := ""
		if r != nil {
			got = r.Reason()
			if r.Table != TableQueuedBytes || r.Share != 25 || r.Cap != 100 {
				t.Errorf("step %d: refusal %+v, want table %s, share 25 of 100", i, r, TableQueuedBytes)
			}
		}
		if got != s.want || b.held[s.who] != s.held || b.Len() != s.left {
			t.Errorf("step %d: take(%d) = %q, held %d, in all %d; want %q, %d, %d", i, s.n, got, b.held[s.who], b.Len(), s.want, s.held, s.left)
		}
	}
	if len(counted) != 3 || counted[0] || counted[1] || !counted[2] {
		t.Errorf("refusals counted %v, want share, share, full", counted)
	}
	b.give(c, 60)
	b.give(a, 25)
	b.give(d, 15)
	if b.Len() != 0 || len(b.held) != 0 {
		t.Errorf("after every byte was given back: %d in all, held %v", b.Len(), b.held)
	}
	if r := b.take(d, 500); r != nil {
		t.Errorf("an empty budget refused one message over its size: %v", r)
	}
}

// callerID is the caller a request with the bearer token who is.
func callerID(t *testing.T, who string) caller.ID {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://stdio.invalid/mcp", nil)
	req.Header = as(who)
	return callersByAuthorization(req)
}
