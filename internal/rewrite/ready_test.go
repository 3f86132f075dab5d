package rewrite

import (
	"bytes"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// arriving is a source as a relay sees an upstream's body: segments arrive
// whole, one at a time; what has arrived is read without waiting. An end
// that came with the last segment is returned with its last bytes, as
// net/http's chunked reader and package hop's bodies return it; one that
// comes later takes a read that waits. Buffered counts what has arrived,
// and may be told to count bytes a read would still wait past (framing):
// lies. A read with nothing arrived waits for the next segment, and
// records that it did.
type arriving struct {
	arrived  []byte
	segments [][]byte
	endCame  bool // the end arrives with the last segment, not after it
	lies     int  // bytes Buffered counts that no read returns
	waited   bool
}

func (a *arriving) Read(p []byte) (int, error) {
	if len(a.arrived) == 0 {
		a.waited = true
		if len(a.segments) == 0 {
			return 0, io.EOF
		}
		a.arrived, a.segments = a.segments[0], a.segments[1:]
	}
	n := copy(p, a.arrived)
	a.arrived = a.arrived[n:]
	if len(a.arrived) == 0 && len(a.segments) == 0 && a.endCame {
		return n, io.EOF
	}
	return n, nil
}

func (a *arriving) Buffered() int { return len(a.arrived) + a.lies }

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

// readAsking reads src to its end as a relay does, asking Ready and
// Arrived before each Next; it fails t when either reads the source, or
// when Ready said yes and Next waited. It returns the events.
func readAsking(t *testing.T, src *arriving, max int) []Event {
	t.Helper()
	r := NewReader(src, max)
	var evs []Event
	for {
		src.waited = false
		before := src.arrived
		ready := r.Ready()
		r.Arrived()
		if src.waited || len(src.arrived) != len(before) {
			t.Fatalf("Ready or Arrived read the source, after events %q", concatRaw(evs))
		}
		ev, err := r.Next()
		if ready && src.waited {
			t.Fatalf("Ready said an event was ready, and Next waited for the source, after events %q", concatRaw(evs))
		}
		if err != nil {
			if err != io.EOF {
				t.Fatalf("error %v, want io.EOF", err)
			}
			return evs
		}
		evs = append(evs, ev)
	}
}

// TestReaderReady: Ready says yes when a whole event, or the end, has been
// read, and no when only part of an event has or nothing has been read;
// asking it changes none of the events.
func TestReaderReady(t *testing.T) {
	t.Parallel()
	ev := "event: message\ndata: {}\n\n"
	for _, tc := range []struct {
		name     string
		segments []string
		endCame  bool
		want     []bool // Ready before each Next, the last the one that meets the end
	}{
		{"a whole reply with its end", []string{ev + ev}, true, []bool{false, true, true}},
		{"the end comes later", []string{ev}, false, []bool{false, false}},
		{"part of an event", []string{ev[:10], ev[10:]}, true, []bool{false, true}},
		{"the blank line's \\n comes later", []string{ev[:len(ev)-1], "\n"}, true, []bool{false, true}},
		{"an event then part of the next", []string{ev + ev[:5], ev[5:]}, true, []bool{false, false, true}},
		{"a whole event then the rest", []string{ev + ev, ev}, false, []bool{false, true, false, false}},
		{"crlf", []string{"data: {}\r\n\r\ndata: 1\r\n\r\n"}, false, []bool{false, true, false}},
		{"a line's \\r\\n, the blank line later", []string{"data: 0\n\ndata: {}\r\n", "\r\n"}, true, []bool{false, false, true}},
		{"a \\r\\n split from the blank line", []string{"data: {}\r", "\n\r\n"}, true, []bool{false, true}},
		{"cr, and a last event without its blank line", []string{"data: {}\r\rdata: 1\r"}, false, []bool{false, false, true}},
		{"a short first read", []string{"\n", "\ndata: {}\n\n"}, false, []bool{false, true, true, false}},
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

// TestReaderReadyReadsNothing: a source may count bytes a read would still
// wait past (a chunked body's framing: a chunk's size line cut short).
// Ready does not read them, and so does not keep a relay waiting with an
// event in hand; Arrived counts them, and reads nothing either.
func TestReaderReadyReadsNothing(t *testing.T) {
	t.Parallel()
	src := &arriving{arrived: []byte("data: 1\n\n"), segments: [][]byte{[]byte("data: 2\n\n")}, lies: 2}
	r := NewReader(src, 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	src.waited = false
	if r.Ready() || src.waited {
		t.Errorf("Ready = %v, waited %v, with only framing left at the source: want false, no read", !src.waited, src.waited)
	}
	if !r.Arrived() || src.waited {
		t.Errorf("Arrived with bytes at the source: want true without a read (waited %v)", src.waited)
	}
	src.lies = 0
	if r.Arrived() {
		t.Error("Arrived with nothing held and nothing at the source: want false")
	}
}

// FuzzReaderReady: however the stream arrives, Ready and Arrived never read
// the source, Ready never says yes when Next would wait for it, and asking
// changes nothing of the events.
func FuzzReaderReady(f *testing.F) {
	for _, tc := range readerCases() {
		f.Add([]byte(tc.in), []byte{3, 0, 200}, true, uint8(0))
		f.Add([]byte(tc.in), []byte{}, false, uint8(2))
	}
	f.Add([]byte("\xef\xbb\xbfdata: 1\n\n"), []byte{1, 0}, true, uint8(0))
	f.Add([]byte("data: 1\r\r\ndata: 2\r\n\r\n"), []byte{7, 0, 1}, true, uint8(1))
	f.Fuzz(func(t *testing.T, in, cuts []byte, endCame bool, lies uint8) {
		src := cut(in, cuts, endCame)
		src.lies = int(lies % 4)
		evs := readAsking(t, src, 1<<20)
		if got := concatRaw(evs); !bytes.Equal(got, in) {
			t.Fatalf("concatenated Raw = %q, want the input %q", got, in)
		}
		plain, _ := readAll(bytes.NewReader(in), 1<<20)
		if diff := cmp.Diff(fieldsOf(plain), fieldsOf(evs)); diff != "" {
			t.Fatalf("asking Ready gives other fields (-plain +asked):\n%s", diff)
		}
	})
}
