package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
)

// TestBodyPastItsDeclaredLengthIsRefused: a body reader that yields more
// than the request's Content-Length (a server or middleware in front that
// does not stop there; neither of the sidecar's does) is refused, not read
// on: the declared length, checked against MaxBodyBytes, is what bounds
// the read, and nothing reaches the upstream.
func TestBodyPastItsDeclaredLengthIsRefused(t *testing.T) {
	const limit = 256
	got := make(chan int, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- len(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(up.Close)
	uu, _ := url.Parse(up.URL)
	p, err := proxy.New(proxy.Options{Upstream: uu, MaxBodyBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","pad":"` + strings.Repeat("a", 1<<20) + `"}}`
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 10 // declared within the limit; the reader yields 1 MiB
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	select {
	case n := <-got:
		t.Errorf("a body of %d bytes past a limit of %d reached the upstream (status %d)", n, limit, rec.Code)
	default:
	}
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", rec.Code)
	}
}
