package rewrite

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// wantEvent is what a test expects of an Event.
type wantEvent struct {
	Raw, Data string
	HasData   bool
	ID        string
	HasID     bool
	Name      string
}

func summarize(ev Event) wantEvent {
	return wantEvent{Raw: string(ev.Raw), Data: string(ev.Data), HasData: ev.Data != nil, ID: ev.ID, HasID: ev.HasID, Name: ev.Name}
}

type readerCase struct {
	in   string
	want []wantEvent // read in one piece
}

// readerCases is the Reader table; FuzzReader and FuzzReframe are seeded
// from it.
func readerCases() map[string]readerCase {
	return map[string]readerCase{
		"empty":              {in: ""},
		"lf":                 {in: "data: {}\n\n", want: []wantEvent{{Raw: "data: {}\n\n", Data: "{}", HasData: true}}},
		"crlf":               {in: "id: 1\r\nevent: message\r\ndata: a\r\n\r\n", want: []wantEvent{{Raw: "id: 1\r\nevent: message\r\ndata: a\r\n\r\n", Data: "a", HasData: true, ID: "1", HasID: true, Name: "message"}}},
		"cr":                 {in: "data: a\r\rdata: b\r\r", want: []wantEvent{{Raw: "data: a\r\r", Data: "a", HasData: true}, {Raw: "data: b\r\r", Data: "b", HasData: true}}},
		"cr then crlf blank": {in: "data: a\r\r\ndata: b\r\n\r\n", want: []wantEvent{{Raw: "data: a\r\r\n", Data: "a", HasData: true}, {Raw: "data: b\r\n\r\n", Data: "b", HasData: true}}},
		"mixed":              {in: "data: a\r\ndata: b\rid: 3\n\n", want: []wantEvent{{Raw: "data: a\r\ndata: b\rid: 3\n\n", Data: "a\nb", HasData: true, ID: "3", HasID: true}}},
		"multi-line data":    {in: "data: {\ndata:  \"a\": 1\ndata: }\n\n", want: []wantEvent{{Raw: "data: {\ndata:  \"a\": 1\ndata: }\n\n", Data: "{\n \"a\": 1\n}", HasData: true}}},
		"comment":            {in: ": keep-alive\n\ndata: x\n: note\n\n", want: []wantEvent{{Raw: ": keep-alive\n\n"}, {Raw: "data: x\n: note\n\n", Data: "x", HasData: true}}},
		"retry":              {in: "retry: 1000\ndata: x\n\n", want: []wantEvent{{Raw: "retry: 1000\ndata: x\n\n", Data: "x", HasData: true}}},
		"named":              {in: "event: update\ndata: x\nevent: last\n\n", want: []wantEvent{{Raw: "event: update\ndata: x\nevent: last\n\n", Data: "x", HasData: true, Name: "last"}}},
		"id nul ignored":     {in: "id: 1\nid: a\x00b\n\n", want: []wantEvent{{Raw: "id: 1\nid: a\x00b\n\n", ID: "1", HasID: true}}},
		"empty id":           {in: "id\n\n", want: []wantEvent{{Raw: "id\n\n", HasID: true}}},
		"data no colon":      {in: "data\n\n", want: []wantEvent{{Raw: "data\n\n", HasData: true}}},
		"data no space":      {in: "data:x\ndata:  y\n\n", want: []wantEvent{{Raw: "data:x\ndata:  y\n\n", Data: "x\n y", HasData: true}}},
		"unknown field":      {in: "foo: bar\ndata: x\n\n", want: []wantEvent{{Raw: "foo: bar\ndata: x\n\n", Data: "x", HasData: true}}},
		"bom":                {in: "\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n", want: []wantEvent{{Raw: "\xef\xbb\xbfdata: a\n\n", Data: "a", HasData: true}, {Raw: "\xef\xbb\xbfdata: b\n\n"}}}, // only a leading BOM is dropped
		"bom only":           {in: "\xef\xbb\xbf", want: []wantEvent{{Raw: "\xef\xbb\xbf"}}},
		"partial final":      {in: "data: a\n\ndata: b", want: []wantEvent{{Raw: "data: a\n\n", Data: "a", HasData: true}, {Raw: "data: b", Data: "b", HasData: true}}},
		"partial line end":   {in: "data: a\r", want: []wantEvent{{Raw: "data: a\r", Data: "a", HasData: true}}},
		"blank lines":        {in: "\n\r\ndata: a\n\n", want: []wantEvent{{Raw: "\n"}, {Raw: "\r\n"}, {Raw: "data: a\n\n", Data: "a", HasData: true}}},
	}
}

// readAll reads every event of in through src and returns them and the
// final error.
func readAll(src io.Reader, max int) ([]Event, error) {
	r := NewReader(src, max)
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	for name, tc := range readerCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs, err := readAll(bytes.NewReader([]byte(tc.in)), 0)
			if err != io.EOF {
				t.Fatalf("Next() final error = %v, want io.EOF", err)
			}
			var got []wantEvent
			for _, ev := range evs {
				got = append(got, summarize(ev))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events of %q mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestReaderChunked reads each case a byte and two bytes at a time: the
// fields must not change and the Raw bytes must still add up to the input,
// whatever the read boundaries (a "\r\n" split across reads is one ending).
func TestReaderChunked(t *testing.T) {
	t.Parallel()
	for name, tc := range readerCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, src := range []io.Reader{
				iotest.OneByteReader(bytes.NewReader([]byte(tc.in))),
				iotest.HalfReader(bytes.NewReader([]byte(tc.in))),
				iotest.DataErrReader(bytes.NewReader([]byte(tc.in))),
			} {
				evs, err := readAll(src, 0)
				if err != io.EOF {
					t.Fatalf("Next() final error = %v, want io.EOF", err)
				}
				if got := string(concatRaw(evs)); got != tc.in {
					t.Errorf("concatenated Raw = %q, want %q", got, tc.in)
				}
				var want []wantEvent
				for _, ev := range tc.want {
					ev.Raw = ""
					want = append(want, ev)
				}
				if diff := cmp.Diff(want, fieldsOf(evs)); diff != "" {
					t.Errorf("fields of %q mismatch (-want +got):\n%s", tc.in, diff)
				}
			}
		})
	}
}

func concatRaw(evs []Event) []byte {
	var all []byte
	for _, ev := range evs {
		all = append(all, ev.Raw...)
	}
	return all
}

// fieldsOf summarizes events without Raw, dropping the prefix-only events a
// "\r\n" split across reads can leave at the end of a stream.
func fieldsOf(evs []Event) []wantEvent {
	var got []wantEvent
	for _, ev := range evs {
		if len(ev.Raw) == ev.prefix && ev.prefix > 0 && ev.Raw[0] == '\n' {
			continue
		}
		w := summarize(ev)
		w.Raw = ""
		got = append(got, w)
	}
	return got
}

func TestReaderTooLarge(t *testing.T) {
	t.Parallel()
	in := "data: 12\n\ndata: 123\n\n" // events of 10 and 11 bytes
	r := NewReader(bytes.NewReader([]byte(in)), 10)
	if ev, err := r.Next(); err != nil || string(ev.Raw) != "data: 12\n\n" {
		t.Fatalf("Next() = %q, %v, want the 10-byte event", ev.Raw, err)
	}
	for range 2 { // the error sticks
		if ev, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("Next() = %q, %v, want ErrEventTooLarge", ev.Raw, err)
		}
	}
}

// TestReaderDoesNotWait shows that an event is returned as soon as its
// blank line arrives, even a bare "\r" one, with the writer still open.
func TestReaderDoesNotWait(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"data: a\n\n", "data: a\r\r", "data: a\r\n\r\n"} {
		pr, pw := io.Pipe()
		go pw.Write([]byte(in))
		got := make(chan string, 1)
		go func() {
			ev, _ := NewReader(pr, 0).Next()
			got <- string(ev.Raw)
		}()
		select {
		case raw := <-got:
			if raw != in {
				t.Errorf("Next() = %q, want %q", raw, in)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Next() on %q still waiting for more bytes", in)
		}
		pw.Close()
	}
}

func TestReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	src := io.MultiReader(bytes.NewReader([]byte("data: a\n\ndata: b")), iotest.ErrReader(boom))
	evs, err := readAll(src, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("final error = %v, want %v", err, boom)
	}
	if got := string(concatRaw(evs)); got != "data: a\n\ndata: b" {
		t.Errorf("events before the error = %q, want every byte read", got)
	}
}

func TestReaderEventOwnsBytes(t *testing.T) {
	t.Parallel()
	r := NewReader(bytes.NewReader([]byte("data: a\n\ndata: b\n\n")), 0)
	first, _ := r.Next()
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if string(first.Raw) != "data: a\n\n" || string(first.Data) != "a" {
		t.Errorf("first event after the next Next = %q, %q; want it unchanged", first.Raw, first.Data)
	}
}

// countingReader counts the reads a Reader makes of its source.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestReaderBuffer: a stream of one small event, the usual reply, is read
// with the first, small buffer; a long stream that arrives in bulk grows
// it to its full size, so that it takes about as few reads as a buffer of
// full size from the start (1 MiB: 64 reads of 16 KiB, plus the four
// smaller ones before the buffer grew). Both streams come out whole.
func TestReaderBuffer(t *testing.T) {
	small := []byte("event: message\ndata: " + `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}` + "\n\n")
	r := NewReader(bytes.NewReader(small), 0)
	ev, err := r.Next()
	if err != nil || !bytes.Equal(ev.Raw, small) {
		t.Fatalf("small stream: %q, %v", ev.Raw, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("small stream: %v after its event, want io.EOF", err)
	}
	if len(r.buf) != firstReadBuf {
		t.Errorf("a stream of %d bytes grew the read buffer to %d bytes, want %d", len(small), len(r.buf), firstReadBuf)
	}

	long := []byte(utf8BOM)
	for len(long) < 1<<20 {
		long = append(long, "data: "+string(bytes.Repeat([]byte("x"), 1000))+"\n\n"...)
	}
	src := &countingReader{r: bytes.NewReader(long)}
	evs, err := readAll(src, 0)
	if err != io.EOF || !bytes.Equal(concatRaw(evs), long) {
		t.Fatalf("long stream: %d bytes back, %v; want %d and io.EOF", len(concatRaw(evs)), err, len(long))
	}
	if want := len(long)/readBufSize + 4 + 2; src.reads > want {
		t.Errorf("long stream of %d bytes: %d reads, want at most %d", len(long), src.reads, want)
	}
	// The same stream in pieces of any size reads as the same events.
	pieces, err := readAll(iotest.HalfReader(bytes.NewReader(long)), 0)
	if err != io.EOF || !bytes.Equal(concatRaw(pieces), long) {
		t.Fatalf("long stream in halves: %d bytes back, %v", len(concatRaw(pieces)), err)
	}
	if diff := cmp.Diff(fieldsOf(evs), fieldsOf(pieces)); diff != "" {
		t.Errorf("long stream in halves (-bulk +halves):\n%s", diff)
	}
}

// TestReaderEventAllocs: a stream of one reply event of a few hundred
// bytes, what the era bridge reads on every call of a sealed session,
// costs the Reader its read buffer, one scratch buffer for the event and
// the event's copy of it: not a scratch buffer grown line by line, nor a
// copy of the usual event name.
func TestReaderEventAllocs(t *testing.T) {
	reply := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" +
		strings.Repeat("x", 300) + "\"}]}}\n\n")
	src := bytes.NewReader(reply)
	n := testing.AllocsPerRun(100, func() {
		src.Reset(reply)
		r := NewReader(src, 0)
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if n > 3 {
		t.Errorf("%v allocations to read a one-event reply, want at most 3 (the read buffer, the event scratch buffer and its copy)", n)
	}
}
