package bridge

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// closeCount is an upstream body that counts its closes.
type closeCount struct {
	io.Reader
	closes int
}

func (c *closeCount) Close() error { c.closes++; return nil }

// TestLegacyEvents: a modern SSE reply read through legacyEvents is the
// legacy client's: other events byte for byte, the response to the
// request renumbered (-32020 is -32001 on the legacy wire), a response to
// another id untouched; at the end the upstream body is closed and the
// call ended, once, and an upstream failure reaches the reader.
func TestLegacyEvents(t *testing.T) {
	msg, _ := rewrite.ParseMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`))
	progress := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
	other := "data: {\"jsonrpc\":\"2.0\",\"id\":8,\"error\":{\"code\":-32020,\"message\":\"m\"}}\n\n"
	mine := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32020,\"message\":\"m\"}}\n\n"
	up := &closeCount{Reader: strings.NewReader(": hi\n\n" + progress + other + mine)}
	ends := 0
	l := &legacyEvents{r: rewrite.NewReader(up, 1<<20), up: up, msg: msg, done: func() { ends++ }}
	got, err := io.ReadAll(iotest.OneByteReader(l))
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if !strings.HasPrefix(s, ": hi\n\n"+progress+other) {
		t.Errorf("the events before the response changed: %q", s)
	}
	rest := strings.TrimPrefix(s, ": hi\n\n"+progress+other)
	if !strings.Contains(rest, `"code":-32001`) || strings.Contains(rest, "-32020") || !strings.Contains(rest, `"id":7`) {
		t.Errorf("the response to id 7 = %q, want its -32020 as -32001", rest)
	}
	if up.closes != 1 || ends != 1 {
		t.Errorf("at the end: upstream closed %d times, call ended %d times; want 1, 1", up.closes, ends)
	}
	if err := l.Close(); err != nil || up.closes != 1 || ends != 1 {
		t.Errorf("Close after the end: %v, closes %d, ends %d; want nil, 1, 1", err, up.closes, ends)
	}
	broken := errors.New("upstream broke")
	up2 := &closeCount{Reader: io.MultiReader(strings.NewReader(progress), iotest.ErrReader(broken))}
	l2 := &legacyEvents{r: rewrite.NewReader(up2, 1<<20), up: up2, msg: msg, done: func() { ends++ }}
	if got, err := io.ReadAll(l2); !errors.Is(err, broken) || string(got) != progress {
		t.Errorf("an upstream that breaks after one event: %q, %v; want the event, then its error", got, err)
	}
}

// TestLegacyEventsClosed: a reply the client closes before its end
// closes the upstream body and ends the call at once, once, and reads no
// more.
func TestLegacyEventsClosed(t *testing.T) {
	msg, _ := rewrite.ParseMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`))
	up := &closeCount{Reader: strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {}\n\n")}
	ends := 0
	l := &legacyEvents{r: rewrite.NewReader(up, 1<<20), up: up, msg: msg, done: func() { ends++ }}
	if _, err := l.Read(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l.Close()
	if up.closes != 1 || ends != 1 {
		t.Errorf("closed twice mid-reply: upstream closed %d times, call ended %d times; want 1, 1", up.closes, ends)
	}
	if n, err := l.Read(make([]byte, 64)); n != 0 || !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Read after Close = %d, %v; want 0, %v", n, err, io.ErrClosedPipe)
	}
}

// held is an upstream body as package hop's looks: what has arrived is read
// without waiting and Buffered says how much; an end that has arrived too
// comes with the last bytes (as hop's bodies return it). A read past what
// has arrived would wait, and fails the test here.
type held struct {
	t       *testing.T
	arrived string
	end     bool // the end has arrived too
}

func (h *held) Read(p []byte) (int, error) {
	if h.arrived == "" {
		if h.end {
			return 0, io.EOF
		}
		h.t.Fatal("a read waited for the upstream")
	}
	n := copy(p, h.arrived)
	h.arrived = h.arrived[n:]
	if h.arrived == "" && h.end {
		return n, io.EOF
	}
	return n, nil
}

func (h *held) Buffered() int { return len(h.arrived) }

func (h *held) Close() error { return nil }

// TestLegacyEventsBuffered: the proxy's relay asks Arrived whether the
// reply's first bytes came with its head (then the head waits for them),
// and Buffered whether a Read would return at once (else it flushes before
// reading on). Buffered says yes after the event of a reply that came
// whole, for the end, so event and end leave together; no when only part
// of the next event, or nothing, has come. Neither reads.
func TestLegacyEventsBuffered(t *testing.T) {
	msg, _ := rewrite.ParseMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`))
	mine := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n"
	for _, tc := range []struct {
		name       string
		arrived    string
		end        bool
		afterFirst bool // Buffered > 0 after the first event
	}{
		{"whole", mine, true, true},
		{"the end later", mine, false, false},
		{"part of the next event", mine + "event: mess", false, false},
	} {
		h := &held{t: t, arrived: tc.arrived, end: tc.end}
		l := &legacyEvents{r: rewrite.NewReader(h, 1<<20), up: h, msg: msg, done: func() {}}
		if !l.Arrived() || l.Buffered() != 0 {
			t.Errorf("%s: before the first read, Arrived %v and Buffered %d; want true and 0 (nothing read yet)", tc.name, l.Arrived(), l.Buffered())
		}
		got, err := io.ReadAll(io.LimitReader(l, int64(len(mine))))
		if err != nil || string(got) != mine {
			t.Fatalf("%s: the first event %q, %v; want %q", tc.name, got, err, mine)
		}
		if got := l.Buffered() > 0; got != tc.afterFirst {
			t.Errorf("%s: after the first event, Buffered > 0 is %v, want %v", tc.name, got, tc.afterFirst)
		}
		if tc.afterFirst {
			if n, err := l.Read(make([]byte, 64)); n != 0 || err != io.EOF {
				t.Errorf("%s: after the first event, Read = %d, %v; want the end", tc.name, n, err)
			}
		}
	}
	h := &held{t: t}
	l := &legacyEvents{r: rewrite.NewReader(h, 1<<20), up: h, msg: msg, done: func() {}}
	if l.Arrived() {
		t.Error("nothing arrived: Arrived says yes")
	}
}
