package onbehalf

import (
	"context"
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
