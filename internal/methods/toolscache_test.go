package methods_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// TestToolsCachePerCaller: one caller's tools/list is fetched once within
// the TTL, another caller's credentials fetch their own, and expiry fetches
// again.
func TestToolsCachePerCaller(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		answer(w, r, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	now := time.Unix(1000, 0)
	src := &methods.UpstreamTools{Upstream: &onbehalf.Upstream{URL: u}, TTL: 10 * time.Second, Now: func() time.Time { return now }}
	msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage("1"), Method: "agents/get"}
	call := func(token string) {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(""))
		r.Header.Set("Authorization", "Bearer "+token)
		tools, err := src.Tools(r, msg)
		if err != nil || tools["echo"] == nil {
			t.Fatalf("Tools = %v, %v", tools, err)
		}
	}
	call("a")
	call("a")
	if n := fetches.Load(); n != 1 {
		t.Errorf("fetches after two calls by one caller within the TTL = %d, want 1", n)
	}
	call("b")
	if n := fetches.Load(); n != 2 {
		t.Errorf("fetches after a second caller = %d, want 2 (never shared)", n)
	}
	now = now.Add(11 * time.Second)
	call("a")
	if n := fetches.Load(); n != 3 {
		t.Errorf("fetches after the TTL = %d, want 3", n)
	}
}

// TestCustomCredentialHeader: with credentials carried in a header of the
// operator's choosing (--auth-headers X-Api-Key), the caller's key goes
// with the tools/list made on its behalf, and two keys never share tools.
func TestCustomCredentialHeader(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Api-Key")
		if key == "" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		answer(w, r, `{"tools":[{"name":"tool-of-`+key+`","inputSchema":{"type":"object"}}]}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	src := &methods.UpstreamTools{Upstream: &onbehalf.Upstream{URL: u, Credentials: []string{"X-Api-Key"}}, TTL: time.Minute}
	msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage("1"), Method: "agents/get"}
	for _, key := range []string{"a", "b", "a"} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(""))
		r.Header.Set("X-Api-Key", key)
		tools, err := src.Tools(r, msg)
		if err != nil {
			t.Fatalf("Tools(key %s): %v", key, err)
		}
		if len(tools) != 1 || tools["tool-of-"+key] == nil {
			t.Errorf("Tools(key %s) = %v, want only tool-of-%s", key, tools, key)
		}
	}
}

// answer writes a JSON-RPC response to the request r carries, with its
// id, as JSON-RPC 2.0 §5 has every server answer.
func answer(w http.ResponseWriter, r *http.Request, result string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &req)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)
}
