package rewrite

import (
	"bytes"
	"testing"
	"testing/iotest"
)

type reframeCase struct {
	event, data, want string
}

// reframeCases is the Reframe table; FuzzReframe is seeded from it.
func reframeCases() map[string]reframeCase {
	return map[string]reframeCase{
		"lf":                 {event: "id: 7\nevent: message\ndata: {\"a\":1}\n\n", data: `{"a":2}`, want: "id: 7\nevent: message\ndata: {\"a\":2}\n\n"},
		"crlf multi to one":  {event: "data: a\r\ndata: b\r\nid: 1\r\n\r\n", data: "x", want: "data: x\r\nid: 1\r\n\r\n"},
		"cr one to multi":    {event: "retry: 5\r: c\rdata: a\r\r", data: "x\ny", want: "retry: 5\r: c\rdata: x\rdata: y\r\r"},
		"data lines apart":   {event: "data: a\nid: 1\ndata: b\n\n", data: "x", want: "data: x\nid: 1\n\n"},
		"no data line":       {event: ": ping\n\n", data: "x", want: ": ping\ndata: x\n\n"},
		"blank only":         {event: "\r\n", data: "x", want: "data: x\r\n\r\n"},
		"no space kept":      {event: "data:a\n\n", data: "b", want: "data:b\n\n"},
		"leading space":      {event: "data:a\n\n", data: " b", want: "data:  b\n\n"},
		"data line endings":  {event: "data: a\n\n", data: "1\r\n2\r3\n", want: "data: 1\ndata: 2\ndata: 3\ndata: \n\n"},
		"empty data":         {event: "event: e\ndata: a\n\n", data: "", want: "event: e\ndata: \n\n"},
		"bom kept":           {event: "\xef\xbb\xbfdata: a\n\n", data: "b", want: "\xef\xbb\xbfdata: b\n\n"},
		"ending of data":     {event: "id: 1\ndata: a\r\n\n", data: "b\nc", want: "id: 1\ndata: b\r\ndata: c\r\n\n"},
		"partial stays open": {event: "id: 1\ndata: a", data: "b", want: "id: 1\ndata: b\n"},
		"unknown field kept": {event: "x-trace: 9\ndata: a\nfoo\n\n", data: "b", want: "x-trace: 9\ndata: b\nfoo\n\n"},
	}
}

func TestReframe(t *testing.T) {
	t.Parallel()
	for name, tc := range reframeCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ev, err := NewReader(bytes.NewReader([]byte(tc.event)), 0).Next()
			if err != nil {
				t.Fatalf("Next() error = %v", err)
			}
			if got := string(Reframe(ev, []byte(tc.data))); got != tc.want {
				t.Errorf("Reframe(%q, %q) = %q, want %q", tc.event, tc.data, got, tc.want)
			}
		})
	}
}

// TestReframeAfterSplitCRLF reframes an event whose Raw starts with the "\n"
// that completed the previous event's "\r": that byte must stay in front.
func TestReframeAfterSplitCRLF(t *testing.T) {
	t.Parallel()
	r := NewReader(iotest.OneByteReader(bytes.NewReader([]byte("data: a\r\r\ndata: b\r\r"))), 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	ev, err := r.Next()
	if err != nil || string(ev.Raw) != "\ndata: b\r\r" {
		t.Fatalf("second Next() = %q, %v, want the event led by the split \\n", ev.Raw, err)
	}
	if got, want := string(Reframe(ev, []byte("c"))), "\ndata: c\r\r"; got != want {
		t.Errorf("Reframe = %q, want %q", got, want)
	}
}
