package onbehalf

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestHeld: a request on a held session carries the caller's headers it
// was opened with, the session's id and version once known, and the
// Accept (and Content-Type) its method needs; the caller's header map is
// not touched.
func TestHeld(t *testing.T) {
	caller := http.Header{"Authorization": {"Bearer a"}, "X-Forwarded-For": {"192.0.2.1"}}
	opening := Held{URL: "http://127.0.0.1:1/mcp", Caller: caller}
	post, err := opening.Post(context.Background(), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if post.Method != http.MethodPost || post.Header.Get("Authorization") != "Bearer a" || post.Header.Get("X-Forwarded-For") != "192.0.2.1" ||
		post.Header.Get("Accept") != "application/json, text/event-stream" || post.Header.Get("Content-Type") != "application/json" {
		t.Errorf("initialize: %s %v", post.Method, post.Header)
	}
	if _, ok := post.Header["Mcp-Session-Id"]; ok {
		t.Errorf("initialize carries a session id: %v", post.Header)
	}
	if _, ok := post.Header["Mcp-Protocol-Version"]; ok {
		t.Errorf("initialize carries a protocol version: %v", post.Header)
	}
	s := opening
	s.ID, s.Version = "sid", "2025-11-25"
	get, err := s.Listen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if get.Method != http.MethodGet || get.Header.Get("Accept") != "text/event-stream" || get.Header.Get("Mcp-Session-Id") != "sid" ||
		get.Header.Get("Mcp-Protocol-Version") != "2025-11-25" || get.Header.Get("Authorization") != "Bearer a" {
		t.Errorf("listen: %s %v", get.Method, get.Header)
	}
	for _, c := range []struct{ last, want string }{
		{"", ""}, {"s_3", "s_3"}, {"a\x01b", ""}, {"a\x7fb", ""},
	} {
		get, err := s.Resume(context.Background(), c.last)
		if err != nil {
			t.Fatal(err)
		}
		if get.Method != http.MethodGet || get.Header.Get("Accept") != "text/event-stream" || get.Header.Get("Mcp-Session-Id") != "sid" ||
			get.Header.Get("Authorization") != "Bearer a" || get.Header.Get("Last-Event-ID") != c.want {
			t.Errorf("resume after %q: %s %v, want Last-Event-ID %q", c.last, get.Method, get.Header, c.want)
		}
		if _, ok := get.Header["Last-Event-Id"]; ok != (c.want != "") {
			t.Errorf("resume after %q: Last-Event-ID sent: %v, want %v", c.last, ok, c.want != "")
		}
	}
	del, err := s.End(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if del.Method != http.MethodDelete || del.Header.Get("Mcp-Session-Id") != "sid" || del.Header.Get("Authorization") != "Bearer a" {
		t.Errorf("end: %s %v", del.Method, del.Header)
	}
	if len(caller) != 2 {
		t.Errorf("the caller's headers were changed: %v", caller)
	}
}

// TestHeldInitialize: the session's initialize carries the caller's
// capabilities and clientInfo as spelled (no HTML escaping), a fresh id
// each time, the caller's headers and none of the session's; what is not
// JSON is refused rather than sent.
func TestHeldInitialize(t *testing.T) {
	s := Held{URL: "http://127.0.0.1:1/mcp", Caller: http.Header{"Authorization": {"Bearer a"}}, ID: "old", Version: "2025-06-18"}
	caps, info := json.RawMessage(`{"x":{"a":"<&>"}}`), json.RawMessage(`{"name":"c","version":"1"}`)
	req, id, err := s.Initialize(context.Background(), "2025-11-25", caps, info)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(req.Body)
	want := `{"jsonrpc":"2.0","id":` + string(id) + `,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"x":{"a":"<&>"}},"clientInfo":{"name":"c","version":"1"}}}`
	if string(b) != want {
		t.Errorf("body %s\nwant %s", b, want)
	}
	if req.Header.Get("Authorization") != "Bearer a" || req.Header.Get("Mcp-Session-Id") != "" || req.Header.Get("Mcp-Protocol-Version") != "" {
		t.Errorf("headers %v", req.Header)
	}
	if _, again, _ := s.Initialize(context.Background(), "2025-11-25", caps, info); string(again) == string(id) {
		t.Errorf("two initializes with one id %s", id)
	}
	if _, _, err := s.Initialize(context.Background(), "2025-11-25", json.RawMessage(`{`), info); err == nil {
		t.Error("capabilities that are not JSON were sent")
	}
}
