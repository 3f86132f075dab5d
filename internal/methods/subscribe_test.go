package methods_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestSubscribeBoundaries: which resources/subscribe requests the sidecar
// answers itself (legacy, a skill:// URI, with a session) and how, and
// which it leaves to the upstream.
func TestSubscribeBoundaries(t *testing.T) {
	t.Parallel()
	h := subscribeHandler(t, notify.Options{MaxSubscriptions: 1})
	const uri = "skill://pdf-processing/SKILL.md"
	for _, tc := range []struct {
		name    string
		modern  bool
		method  string
		uri     any
		session string
		local   bool
		code    int // 0: the empty result
	}{
		{name: "subscribe", method: "resources/subscribe", uri: uri, session: "A", local: true},
		{name: "again is no error", method: "resources/subscribe", uri: uri, session: "A", local: true},
		{name: "a skill URI not in the catalog yet", method: "resources/subscribe", uri: "skill://later/SKILL.md", session: "B", local: true},
		{name: "past the bound", method: "resources/subscribe", uri: "skill://pdf-processing/forms.md", session: "A", local: true, code: -32603},
		{name: "no session", method: "resources/subscribe", uri: uri, local: true, code: -32600},
		{name: "unsubscribe", method: "resources/unsubscribe", uri: uri, session: "A", local: true},
		{name: "unsubscribe unknown", method: "resources/unsubscribe", uri: uri, session: "Z", local: true},
		{name: "an upstream URI", method: "resources/subscribe", uri: "file:///x", session: "A"},
		{name: "uri not a string", method: "resources/subscribe", uri: 7, session: "A"},
		{name: "modern wire", modern: true, method: "resources/subscribe", uri: uri, session: "A"},
	} {
		r, msg := localRequest(t, tc.modern, tc.method, map[string]any{"uri": tc.uri})
		if tc.session != "" {
			r.Header.Set("Mcp-Session-Id", tc.session)
		}
		w := httptest.NewRecorder()
		if got := serveLocal(h, w, r, msg); got != tc.local {
			t.Errorf("%s: ServeLocal = %v, want %v", tc.name, got, tc.local)
			continue
		}
		if !tc.local {
			if w.Body.Len() != 0 {
				t.Errorf("%s: forwarded, yet wrote %q", tc.name, w.Body)
			}
			continue
		}
		checkEmptyOrCode(t, tc.name, w.Body.Bytes(), tc.code)
	}
}

// TestSubscribeLongURI: a subscription is held for as long as its session
// is, so the URI it names is memory held that long. A skill URI longer
// than notify.MaxSubscriptionURI (the era bridge's bound on the
// subscriptions it keeps) is refused with invalid params and recorded
// nowhere; one at the bound is accepted.
func TestSubscribeLongURI(t *testing.T) {
	t.Parallel()
	h := subscribeHandler(t, notify.Options{})
	const prefix = "skill://pdf-processing/"
	at := prefix + strings.Repeat("a", 8<<10-len(prefix))
	for _, tc := range []struct {
		name string
		uri  string
		code int // 0: the empty result
	}{
		{"at the bound", at, 0},
		{"one byte over", at + "a", -32602},
		{"a megabyte", prefix + strings.Repeat("a", 1<<20), -32602},
	} {
		r, msg := localRequest(t, false, "resources/subscribe", map[string]any{"uri": tc.uri})
		r.Header.Set("Mcp-Session-Id", "A")
		w := httptest.NewRecorder()
		if !serveLocal(h, w, r, msg) {
			t.Fatalf("%s: forwarded, want the sidecar's answer", tc.name)
		}
		checkEmptyOrCode(t, tc.name, w.Body.Bytes(), tc.code)
	}
}

// TestSubscribeShare: the subscriptions of all sessions are a table
// callers share (package caller): a caller at its share of it is refused
// as over any other table's share (429, Retry-After, -32603 with
// data.reason caller_share_exhausted and data.table), and another caller
// still subscribes.
func TestSubscribeShare(t *testing.T) {
	t.Parallel()
	h := subscribeHandler(t, notify.Options{MaxSubscriptionsAll: 4, SharePercent: 25}) // a share of 1
	sub := func(addr, sid, uri string) *httptest.ResponseRecorder {
		r, msg := localRequest(t, false, "resources/subscribe", map[string]any{"uri": uri})
		r.RemoteAddr = addr + ":40000"
		r.Header.Set("Mcp-Session-Id", sid)
		w := httptest.NewRecorder()
		if !serveLocal(h, w, r, msg) {
			t.Fatalf("%s %s: forwarded, want the sidecar's answer", addr, uri)
		}
		return w
	}
	if w := sub("192.0.2.1", "A", "skill://pdf-processing/SKILL.md"); w.Code != 200 || !strings.Contains(w.Body.String(), `"result":{}`) {
		t.Fatalf("first subscription: %d %s", w.Code, w.Body)
	}
	w := sub("192.0.2.1", "A", "skill://pdf-processing/forms.md")
	var rep struct {
		Error *struct {
			Code int               `json:"code"`
			Data map[string]string `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil || rep.Error == nil {
		t.Fatalf("past the share: %d %s, want an error", w.Code, w.Body)
	}
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || rep.Error.Code != -32603 ||
		rep.Error.Data["reason"] != "caller_share_exhausted" || rep.Error.Data["table"] != "notify_subscriptions" {
		t.Errorf("past the share: %d Retry-After %q %s, want 429 with Retry-After, -32603, caller_share_exhausted of notify_subscriptions",
			w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := sub("192.0.2.2", "B", "skill://pdf-processing/forms.md"); w.Code != 200 || !strings.Contains(w.Body.String(), `"result":{}`) {
		t.Errorf("another caller: %d %s, want the empty result", w.Code, w.Body)
	}
}

// subscribeHandler is a Handler over the PDF plugin whose subscriptions
// go to a hub with opts.
func subscribeHandler(t *testing.T, opts notify.Options) *methods.Handler {
	t.Helper()
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginPDF())
	snap, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }, Subscriptions: notify.New(opts)})
}

// checkEmptyOrCode checks that body is a JSON-RPC reply to id 1: the
// empty result when code is 0, else an error with that code.
func checkEmptyOrCode(t *testing.T, name string, body []byte, code int) {
	t.Helper()
	var rep struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	switch {
	case json.Unmarshal(body, &rep) != nil || rep.ID != 1:
		t.Errorf("%s: reply %.200q is not a JSON-RPC reply to id 1", name, body)
	case code == 0 && (rep.Error != nil || string(rep.Result) != "{}"):
		t.Errorf("%s: reply %.200s, want the empty result", name, body)
	case code != 0 && (rep.Error == nil || rep.Error.Code != code):
		t.Errorf("%s: reply %.200s, want error %d", name, body, code)
	}
}
