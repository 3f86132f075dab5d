package proxy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// seen records what an observer was shown.
type seen struct {
	msgs  []string
	kinds []rewrite.Dispatch
	cur   bytes.Buffer
	clean *bool
}

func (s *seen) Write(p []byte) (int, error) { return s.cur.Write(p) }
func (s *seen) EndMessage(d rewrite.Dispatch) {
	s.msgs, s.kinds = append(s.msgs, s.cur.String()), append(s.kinds, d)
	s.cur.Reset()
}
func (s *seen) Done(clean bool) {
	if s.clean != nil {
		panic("Done twice")
	}
	s.clean = &clean
}

// tapBody reads body through an sseTap in pieces of n bytes.
func tapBody(body string, n int) *seen {
	s := &seen{}
	t := newSSETap(io.NopCloser(&pieces{b: []byte(body), n: n}), s)
	_, _ = io.Copy(io.Discard, t)
	_ = t.Close()
	return s
}

// pieces is a reader that returns at most n bytes a read.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.b)
	p.b = p.b[k:]
	return k, nil
}

func TestSSETap(t *testing.T) {
	t.Parallel()
	all, none, some := rewrite.DispatchAll, rewrite.DispatchNone, rewrite.DispatchSome
	for name, tc := range map[string]struct {
		body  string
		msgs  []string
		kinds []rewrite.Dispatch
		clean bool
	}{
		"one event":          {"data: a\n\n", []string{"a"}, []rewrite.Dispatch{all}, true},
		"CRLF":               {"data: a\r\ndata:b\r\n\r\n", []string{"a\nb"}, []rewrite.Dispatch{all}, true},
		"BOM dropped":        {"\ufeffdata: a\n\n", []string{"a"}, []rewrite.Dispatch{all}, true},
		"BOM only once":      {"\ufeff\ufeffdata: a\n\n", nil, nil, true},
		"half a BOM":         {"\xef\xbbdata: a\n\n", nil, nil, true},
		"type message":       {"event: message\ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{all}, true},
		"type empty":         {"event:\ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{all}, true},
		"other type":         {"event: ping\ndata: a\n\ndata: b\n\n", []string{"a", "b"}, []rewrite.Dispatch{none, all}, true},
		"type after data":    {"data: a\nevent: ping\n\n", []string{"a"}, []rewrite.Dispatch{none}, true},
		"last type counts":   {"event: ping\nevent: message\ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{all}, true},
		"padded type":        {"event:  message\ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{some}, true},
		"trailing space":     {"event: message \ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{some}, true},
		"BOM, then type":     {"\ufeffevent: ping\ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{some}, true},
		"long type":          {"event: " + strings.Repeat(" ", 40) + "message\ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{some}, true},
		"comment and id":     {": hi\nid: 3\ndata: a\n\n", []string{"a"}, []rewrite.Dispatch{all}, true},
		"data without colon": {"data\ndata: a\n\n", []string{"\na"}, []rewrite.Dispatch{all}, true},
		"bare CR":            {"data: a\r\rdata: b\n\n", nil, nil, false},
		"CR at the end":      {"data: a\n\r", []string{"a"}, []rewrite.Dispatch{all}, false},
		"unended event":      {"data: a\n", nil, nil, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, n := range []int{1, 2, 3, 5, 1 << 20} {
				s := tapBody(tc.body, n)
				if diff := cmp.Diff(tc.msgs, s.msgs); diff != "" {
					t.Errorf("in pieces of %d: messages (-want +got):\n%s", n, diff)
				}
				if diff := cmp.Diff(tc.kinds, s.kinds); diff != "" {
					t.Errorf("in pieces of %d: dispatch (-want +got):\n%s", n, diff)
				}
				if s.clean == nil || *s.clean != tc.clean {
					t.Errorf("in pieces of %d: clean %v, want %v", n, s.clean, tc.clean)
				}
			}
		})
	}
}

// FuzzSSETap: however a body is cut, the tap shows the same messages; and
// when it calls the reply clean, the messages it says every client reads
// are the data of the events rewrite.Reader (the sidecar's SSE reader,
// written apart from the tap) reads with no type or "message", and those
// it says none reads are ones of another type.
func FuzzSSETap(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "\ufeffevent: x\ndata: a\n\n", "event:  message\ndata:b\r\n\r\n", "data: a\r\rdata: b\n\n", ": c\nid: 1\ndata\n\n"} {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, body string, cut uint8) {
		whole := tapBody(body, 1<<20)
		cutUp := tapBody(body, int(cut%16)+1)
		if !cmp.Equal(whole.msgs, cutUp.msgs) || !cmp.Equal(whole.kinds, cutUp.kinds) || *whole.clean != *cutUp.clean {
			t.Fatalf("%q whole: %q %v %v; in pieces: %q %v %v", body, whole.msgs, whole.kinds, *whole.clean, cutUp.msgs, cutUp.kinds, *cutUp.clean)
		}
		if !*whole.clean {
			return
		}
		r := rewrite.NewReader(strings.NewReader(body), 1<<20)
		var i int
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			ended := bytes.HasSuffix(ev.Raw, []byte("\n\n")) || bytes.HasSuffix(ev.Raw, []byte("\r\n\r\n")) || bytes.HasSuffix(ev.Raw, []byte("\n\r\n"))
			if ev.Data == nil || !ended || len(ev.Data) == 0 && !bytes.Contains(ev.Raw, []byte("data")) {
				continue
			}
			if i >= len(whole.msgs) {
				t.Fatalf("%q: the reader reads event %q past the tap's %d messages", body, ev.Data, len(whole.msgs))
			}
			if whole.msgs[i] != string(ev.Data) {
				t.Fatalf("%q: message %d is %q to the tap, %q to the reader", body, i, whole.msgs[i], ev.Data)
			}
			message := ev.Name == "" || ev.Name == "message"
			if k := whole.kinds[i]; message && k == rewrite.DispatchNone || !message && k == rewrite.DispatchAll {
				t.Fatalf("%q: event %d typed %q, the tap says %d", body, i, ev.Name, k)
			}
			i++
		}
	})
}
