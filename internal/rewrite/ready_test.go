package rewrite

import (
	"bytes"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// arriving is a source as a relay sees an upstream's body: segments arrive
// whole, one at a time; what has arrived is read without waiting, and
// Buffered says how much that is (package hop's bodies count the last
// chunk's bytes: an end that has arrived counts 1 here). A read with
// nothing arrived waits for the next segment, and records that it did.
type arriving struct {
	arrived  []byte
	segments [][]byte
	endCame  bool // the end arrives with the last segment, not after it
	ended    bool // io.EOF has been returned
	waited   bool
}

func (a *arriving) Read(p []byte) (int, error) {
	if len(a.arrived) == 0 {
		switch {
		case len(a.segments) > 0:
			a.waited = true
			a.arrived, a.segments = a.segments[0], a.segments[1:]
		case !a.endCame:
			a.waited = true
			a.endCame = true
		}
		if len(a.arrived) == 0 {
			a.ended = true
			return 0, io.EOF
		}
	}
	n := copy(p, a.arrived)
	a.arrived = a.arrived[n:]
	return n, nil
}

func (a *arriving) Buffered() int {
	if len(a.arrived) == 0 && len(a.segments) == 0 && a.endCame && !a.ended {
		return 1
	}
	return len(a.arrived)
}

// cut splits in into segments at the lengths cuts gives, the first
// arrived; the rest arrives later.
func cut(in, cuts []byte, endCame bool) *arriving {
	a := &arriving{endCame: endCame}
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if i < len(cuts) {
			n = min(n, int(cuts[i])+1)
		}
		a.segments, in = append(a.segments, in[:n]), in[n:]
	}
	if len(a.segments) > 0 {
		a.arrived, a.segments = a.segments[0], a.segments[1:]
	}
	return a
}

// readAsking reads src to its end as a relay does, asking Ready before each
// Next; it fails t when Ready said yes and Next (or Ready itself) waited.
// It returns the events and how many times Ready said yes.
func readAsking(t *testing.T, src *arriving, max int) ([]Event, int) {
	t.Helper()
	r := NewReader(src, max)
	var evs []Event
	yes := 0
	for {
		src.waited = false
		ready := r.Ready()
		if src.waited {
			t.Fatalf("Ready waited for the source, after events %q", concatRaw(evs))
		}
		if ready {
			yes++
		}
		ev, err := r.Next()
		if ready && src.waited {
			t.Fatalf("Ready said an event was ready, and Next waited for the source, after events %q", concatRaw(evs))
		}
		if err != nil {
			if err != io.EOF {
				t.Fatalf("error %v, want io.EOF", err)
			}
			return evs, yes
		}
		evs = append(evs, ev)
	}
}

// TestReaderReady: Ready says yes when a whole event, or the end, has
// arrived, and no when only part of an event has; asking it changes none
// of the events.
func TestReaderReady(t *testing.T) {
	t.Parallel()
	ev := "event: message\ndata: {}\n\n"
	for _, tc := range []struct {
		name     string
		segments []string
		endCame  bool
		want     []bool // Ready before each Next, the last the one that meets the end
	}{
		{"a whole reply with its end", []string{ev + ev}, true, []bool{true, true, true}},
		{"the end comes later", []string{ev}, false, []bool{true, false}},
		{"part of an event", []string{ev[:10], ev[10:]}, true, []bool{false, true}},
		{"the blank line's \\n comes later", []string{ev[:len(ev)-1], "\n"}, true, []bool{false, true}},
		{"an event then part of the next", []string{ev + ev[:5], ev[5:]}, true, []bool{true, false, true}},
		{"crlf", []string{"data: {}\r\n\r\n"}, true, []bool{true, true}},
		{"a line's \\r\\n, the blank line later", []string{"data: {}\r\n", "\r\n"}, true, []bool{false, true}},
		{"a \\r\\n split from the blank line", []string{"data: {}\r", "\n\r\n"}, true, []bool{false, true}},
		{"cr, and a last event without its blank line", []string{"data: {}\r\rdata: 1\r"}, false, []bool{true, false, true}},
		{"a short first read (the BOM check wants three bytes)", []string{"\n\n", "data: {}\n\n"}, true, []bool{false, true, true, true}},
		{"nothing yet", nil, false, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &arriving{endCame: tc.endCame}
			for _, s := range tc.segments {
				src.segments = append(src.segments, []byte(s))
			}
			if len(src.segments) > 0 {
				src.arrived, src.segments = src.segments[0], src.segments[1:]
			}
			r := NewReader(src, 0)
			var got []bool
			var raw []byte
			for {
				got = append(got, r.Ready())
				ev, err := r.Next()
				if err != nil {
					break
				}
				raw = append(raw, ev.Raw...)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Ready before each Next (-want +got):\n%s", diff)
			}
			var all []byte
			for _, s := range tc.segments {
				all = append(all, s...)
			}
			if !bytes.Equal(raw, all) {
				t.Errorf("events %q, want the stream %q", raw, all)
			}
		})
	}
}

// TestReaderReadyWithoutBuffered: a source that does not say what it
// holds is never read by Ready, which then goes by the bytes read so far.
func TestReaderReadyWithoutBuffered(t *testing.T) {
	t.Parallel()
	r := NewReader(io.MultiReader(bytes.NewReader([]byte("data: 1\n\ndata: 2\n\n"))), 0)
	if r.Ready() {
		t.Error("Ready before any read of a source that says nothing: want false")
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if !r.Ready() {
		t.Error("Ready with the second event read in with the first: want true")
	}
}

// FuzzReaderReady: however the stream arrives, Ready never says yes when
// Next would wait for the source, and asking it changes nothing of the
// events.
func FuzzReaderReady(f *testing.F) {
	for _, tc := range readerCases() {
		f.Add([]byte(tc.in), []byte{3, 0, 200}, true)
		f.Add([]byte(tc.in), []byte{}, false)
	}
	f.Add([]byte("\xef\xbb\xbfdata: 1\n\n"), []byte{1, 0}, true)
	f.Add([]byte("data: 1\r\r\ndata: 2\r\n\r\n"), []byte{7, 0, 1}, true)
	f.Fuzz(func(t *testing.T, in, cuts []byte, endCame bool) {
		evs, _ := readAsking(t, cut(in, cuts, endCame), 1<<20)
		if got := concatRaw(evs); !bytes.Equal(got, in) {
			t.Fatalf("concatenated Raw = %q, want the input %q", got, in)
		}
		plain, _ := readAll(bytes.NewReader(in), 1<<20)
		if diff := cmp.Diff(fieldsOf(plain), fieldsOf(evs)); diff != "" {
			t.Fatalf("asking Ready gives other fields (-plain +asked):\n%s", diff)
		}
	})
}
