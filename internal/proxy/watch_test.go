package proxy

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestWatchBodySeesResourceNotifications(t *testing.T) {
	t.Parallel()
	note := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n"
	other := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"message\":\"notifications/resource\"}}\n\n"
	tests := []struct {
		name, stream string
		want         int
	}{
		{"none", other + other, 0},
		{"one", other + note, 1},
		{"updated", "data: {\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"skill://a/SKILL.md\"}}\n\n", 1},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			fired := 0
			var r io.Reader = strings.NewReader(tt.stream)
			if oneByte {
				r = iotest.OneByteReader(r) // every split of the pattern across reads
			}
			b := &watchBody{ReadCloser: io.NopCloser(r), fire: func() { fired++ }}
			got, err := io.ReadAll(b)
			if err != nil || string(got) != tt.stream {
				t.Fatalf("%s: stream changed or failed: %v", tt.name, err)
			}
			if (fired > 0) != (tt.want > 0) {
				t.Errorf("%s (one byte reads %v): fired %d times, want %d", tt.name, oneByte, fired, tt.want)
			}
		}
	}
}

// FuzzWatchBody: whatever the stream and however it is split into reads, the
// watcher fires exactly when the pattern occurs, and passes every byte.
func FuzzWatchBody(f *testing.F) {
	f.Add([]byte(`data: {"method":"notifications/resources/updated"}`), uint8(3))
	f.Add([]byte(`data: {"method":"notifications/progress"}`), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, split uint8) {
		fired := false
		var r io.Reader = strings.NewReader(string(stream))
		if split > 0 {
			r = iotest.HalfReader(r)
		}
		if split%2 == 1 {
			r = iotest.OneByteReader(r)
		}
		b := &watchBody{ReadCloser: io.NopCloser(r), fire: func() { fired = true }}
		got, _ := io.ReadAll(b)
		if string(got) != string(stream) {
			t.Fatalf("stream changed")
		}
		if want := strings.Contains(string(stream), resourcesChanged); fired != want {
			t.Fatalf("fired = %v, want %v for %q", fired, want, stream)
		}
	})
}
