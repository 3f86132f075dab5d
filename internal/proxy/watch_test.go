package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

type fired struct{ method, uri string }

func watchAll(t *testing.T, r io.Reader) ([]fired, string) {
	t.Helper()
	var got []fired
	b := &watchBody{ReadCloser: io.NopCloser(r), fire: func(_ *http.Request, m, u string) { got = append(got, fired{m, u}) }}
	out, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	return got, string(out)
}

// TestWatchBodyParsesNotifications: only a JSON-RPC notification with one of
// the two methods fires, as an SSE event (MCP streamable HTTP: one message
// per event's data); the name as data (a tools/call result quoting it, a
// progress message, a request's params) fires nothing.
func TestWatchBodyParsesNotifications(t *testing.T) {
	t.Parallel()
	listChanged := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n"
	updated := "event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"skill://a/SKILL.md\"}}\n\n"
	toolReply := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"method\\\":\\\"notifications/resources/updated\\\",\\\"params\\\":{\\\"uri\\\":\\\"skill://a/SKILL.md\\\"}}\"}]}}\n\n"
	progress := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"message\":\"\\\"notifications/resources/list_changed\"}}\n\n"
	request := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"skill://a/SKILL.md\"}}\n\n"
	tests := []struct {
		name, stream string
		want         []fired
	}{
		{"tool reply quoting it", toolReply, nil},
		{"progress quoting it", progress, nil},
		{"a request is no notification", request, nil},
		{"list_changed", progress + listChanged, []fired{{ResourcesListChanged, ""}}},
		{"updated", toolReply + updated, []fired{{ResourceUpdated, "skill://a/SKILL.md"}}},
		{"CRLF lines", strings.ReplaceAll(updated, "\n", "\r\n"), []fired{{ResourceUpdated, "skill://a/SKILL.md"}}},
		{"CR lines", strings.ReplaceAll(listChanged, "\n", "\r"), []fired{{ResourcesListChanged, ""}}},
		{"data split over lines", "data: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"notifications/resources/list_changed\"}\n\n", []fired{{ResourcesListChanged, ""}}},
		{"batch", "data: [{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}]\n\n", []fired{{ResourcesListChanged, ""}}},
		{"unterminated event", strings.TrimSuffix(listChanged, "\n"), nil},
		// JSON may escape any character of the name: such an event is
		// parsed too, not passed over for want of the name's bytes.
		{"name with escaped slashes", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications\\/resources\\/list_changed\"}\n\n", []fired{{ResourcesListChanged, ""}}},
		{"name with a unicode escape", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications\\u002fresources/updated\",\"params\":{\"uri\":\"u\"}}\n\n", []fired{{ResourceUpdated, "u"}}},
		{"after an event too long to keep", "data: \"" + strings.Repeat("x", maxWatchedEvent) + "\"\n\n" + listChanged, []fired{{ResourcesListChanged, ""}}},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.stream)
			if oneByte {
				r = iotest.OneByteReader(r) // every split of an event across reads
			}
			got, out := watchAll(t, r)
			if out != tt.stream {
				t.Fatalf("%s: the stream changed", tt.name)
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Errorf("%s (one-byte reads %v): fired %v, want %v", tt.name, oneByte, got, tt.want)
			}
		}
	}
}

// refFired parses a whole stream the plain way (SSE spec §9.2.6: normalise
// line ends, events end at blank lines, data lines joined by LF) and lists
// the notifications a watcher must report.
func refFired(stream string) []fired {
	s := strings.ReplaceAll(stream, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var out []fired
	var data []string
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if i == len(lines)-1 {
			break // not ended by a line break: not a line yet
		}
		if line == "" {
			joined := strings.Join(data, "\n")
			data = nil
			if joined == "" || len(joined) >= maxWatchedEvent {
				continue
			}
			var msgs []map[string]json.RawMessage
			var one map[string]json.RawMessage
			if json.Unmarshal([]byte(joined), &one) == nil {
				msgs = append(msgs, one)
			} else if json.Unmarshal([]byte(joined), &msgs) != nil {
				continue
			}
			for _, m := range msgs {
				var method, uri, version string
				_, hasID := m["id"]
				// A JSON-RPC notification says "jsonrpc":"2.0" (JSON-RPC 2.0
				// section 4); a message without it is no notification.
				if hasID || json.Unmarshal(m["method"], &method) != nil ||
					json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
					continue
				}
				if method == ResourcesListChanged || method == ResourceUpdated {
					var p struct {
						URI string `json:"uri"`
					}
					_ = json.Unmarshal(m["params"], &p)
					uri = p.URI
					out = append(out, fired{method, uri})
				}
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	return out
}

// FuzzWatchBody: however the stream is split into reads, the watcher passes
// every byte and reports the notifications a whole-stream parse finds.
func FuzzWatchBody(f *testing.F) {
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"u\"}}\r\n\r\n"), uint8(3))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"), uint8(1))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"notifications/resources/updated\"}}\n\n"), uint8(2))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications\\/resources\\u002Fupdated\"}\n\n"), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, split uint8) {
		var r io.Reader = strings.NewReader(string(stream))
		if split > 0 {
			r = iotest.HalfReader(r)
		}
		if split%2 == 1 {
			r = iotest.OneByteReader(r)
		}
		got, out := watchAll(t, r)
		if out != string(stream) {
			t.Fatalf("stream changed")
		}
		want := refFired(string(stream))
		if len(got) != len(want) {
			t.Fatalf("fired %v, want %v for %q", got, want, stream)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("fired %v, want %v for %q", got, want, stream)
			}
		}
	})
}

// BenchmarkWatchEvent: the watcher's cost for one progress notification,
// the event a long tool call's stream mostly carries.
func BenchmarkWatchEvent(b *testing.B) {
	ev := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok-1\",\"progress\":3,\"total\":50,\"message\":\"1764660000000000000\"}}\n\n")
	w := &watchBody{ReadCloser: io.NopCloser(strings.NewReader("")), fire: func(*http.Request, string, string) {}}
	b.ReportAllocs()
	b.SetBytes(int64(len(ev)))
	for b.Loop() {
		w.scan(ev)
	}
}

// TestWatchReplyAllocs: the reply to a POST, when the upstream answers
// with an SSE stream (go-sdk's and the TypeScript SDK's servers do by
// default), is one event of a few hundred bytes. Watching it costs one
// allocation, the watcher itself, which holds the first room for the
// event's line and data: not buffers of their own, nor buffers grown by
// appends, nor a closure for the hook.
func TestWatchReplyAllocs(t *testing.T) {
	reply := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" +
		strings.Repeat("x", 300) + "\"}]}}\n\n")
	p := &Proxy{opts: Options{OnResourcesChanged: func(*http.Request, string, string) {}}}
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	src := bytes.NewReader(nil)
	up := io.NopCloser(src)
	buf := make([]byte, 64) // several reads, as a relay's quiet buffer makes
	n := testing.AllocsPerRun(100, func() {
		src.Reset(reply)
		b := p.watch(req, up)
		for {
			if _, err := b.Read(buf); err != nil {
				break
			}
		}
	})
	if n > 1 {
		t.Errorf("%v allocations to watch a one-event reply, want 1", n)
	}
}

// TestWatchLongLineKeepsEarlierData: a notification whose data spans two
// lines, the second longer than the watcher's first room for a line, is
// still parsed: the long line grows into a buffer of its own, not over the
// data kept from the first.
func TestWatchLongLineKeepsEarlierData(t *testing.T) {
	uri := "file:///" + strings.Repeat("x", 2*firstWatchLine)
	ev := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\n" +
		"data: \"params\":{\"uri\":\"" + uri + "\"}}\n\n"
	got, out := watchAll(t, strings.NewReader(ev))
	if out != ev {
		t.Fatalf("passed on %q, want the stream unchanged", out)
	}
	if want := []fired{{ResourceUpdated, uri}}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("fired %v, want %v", got, want)
	}
}
