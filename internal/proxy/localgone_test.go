package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// cancelledLocal answers every request itself with a failure wrapping
// context.Canceled, as a call on the caller's behalf returns when the
// caller has left.
type cancelledLocal struct{}

func (cancelledLocal) ServeLocal(*http.Request, rewrite.Message) (reply.Reply, bool) {
	return reply.Reply{Err: fmt.Errorf("upstream resources/list: %w", context.Canceled)}, true
}

func (cancelledLocal) EditReply(*http.Request, rewrite.Message) func([]byte) []byte { return nil }

// TestLocalAnswerToACallerGone: the sidecar's own answer failing because
// its caller left is written to nobody (as a forwarded request's is); the
// same failure for a caller still there is a 502 JSON-RPC error.
func TestLocalAnswerToACallerGone(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	p, err := proxy.New(proxy.Options{Upstream: u, Local: cancelledLocal{}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"skills/list"}`)).WithContext(ctx)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		return w
	}
	if w := call(context.Background()); w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), `"error"`) {
		t.Fatalf("caller still there: HTTP %d %q, want a 502 JSON-RPC error", w.Code, w.Body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w := call(ctx); w.Body.Len() != 0 || w.Header().Get("Content-Type") != "" {
		t.Errorf("caller gone: wrote HTTP %d %q, want nothing", w.Code, w.Body)
	}
}
