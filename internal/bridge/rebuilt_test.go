package bridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
)

// TestRebuilt: a request the bridge rebuilds from a caller's carries its
// own header (an edit never reaches the caller's, which the proxy pools),
// the new body in memory (hop sends it again from Bytes), a GetBody only
// where net/http's Transport would need one to send it again, and the new
// context.
func TestRebuilt(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "call")
	for _, u := range []string{"http://upstream/mcp", "https://upstream/mcp"} {
		req, _ := http.NewRequest(http.MethodPost, u, nil)
		req.Header.Set("Mcp-Session-Id", "caller's")
		out := rebuilt(ctx, req, []byte(`{"new":1}`))
		modernHeaders(out.Header, "tools/call", json.RawMessage(`{"name":"x"}`))
		if got := req.Header.Get("Mcp-Session-Id"); got != "caller's" || req.Header.Get("Mcp-Method") != "" {
			t.Errorf("%s: the caller's header was edited: %v", u, req.Header)
		}
		if out.Context().Value(key{}) != "call" {
			t.Errorf("%s: not under the new context", u)
		}
		m, ok := out.Body.(*hop.MemBody)
		if !ok || string(m.Bytes()) != `{"new":1}` || out.ContentLength != 9 {
			t.Fatalf("%s: body %T, ContentLength %d; want a hop.MemBody of the 9 new bytes", u, out.Body, out.ContentLength)
		}
		if wantGetBody := u[:5] == "https"; (out.GetBody != nil) != wantGetBody {
			t.Errorf("%s: GetBody set %v, want %v", u, out.GetBody != nil, wantGetBody)
		} else if out.GetBody != nil {
			rc, _ := out.GetBody()
			if b, _ := io.ReadAll(rc); string(b) != `{"new":1}` {
				t.Errorf("%s: GetBody reads %q", u, b)
			}
		}
	}
}

// TestFrontCallEnd: a call in flight is in the table until it ends, then
// canceled and out of it; a second call under the same id is not put in
// the table, and its end leaves the first's place alone; a cancellation
// naming the id spelled otherwise cancels it.
func TestFrontCallEnd(t *testing.T) {
	keys, err := sessionid.NewKeys(sessionid.NewRandomKey())
	if err != nil {
		t.Fatal(err)
	}
	id, err := keys.Seal(sessionid.State{Expires: time.Unix(2e9, 0)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := keys.Open(id, nil, time.Unix(1e9, 0))
	if err != nil {
		t.Fatal(err)
	}
	f := &LegacyFront{calls: map[callKey]*frontCall{}, Keys: func() *sessionid.Keys { return keys }}
	s := &frontSession{sealed: st.Key}
	client, leave := context.WithCancel(context.Background())
	defer leave()
	first := f.startCall(client, s, json.RawMessage(" 7 "))
	second := f.startCall(client, s, json.RawMessage("7"))
	if f.calls[callKey{s.key, idmap.Key(json.RawMessage("7"))}] != first || len(f.calls) != 1 {
		t.Fatalf("table %v: want the first call alone under id 7", f.calls)
	}
	second.end()
	if f.calls[callKey{s.key, idmap.Key(json.RawMessage("7"))}] != first {
		t.Error("the second call's end took the first's place")
	}
	if second.Err() == nil || first.Err() != nil {
		t.Errorf("after the second's end: its Err %v, the first's %v; want canceled, nil", second.Err(), first.Err())
	}
	// 7.0 is the id 7 (a JSON number is its value).
	f.cancelCall(s, json.RawMessage("7.0"))
	if first.Err() == nil {
		t.Error("notifications/cancelled for id 7.0 did not cancel the call of id 7")
	}
	first.end()
	first.end()
	if len(f.calls) != 0 {
		t.Errorf("table %v after the end: want empty", f.calls)
	}
}
