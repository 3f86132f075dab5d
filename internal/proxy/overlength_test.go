package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodyPastItsDeclaredLengthIsRefused: a body reader that yields more
// than the request's Content-Length (a server or middleware in front that
// does not stop there; neither of the sidecar's does) is refused, not read
// on: the declared length, checked against MaxBodyBytes, is what bounds
// the read, and nothing reaches the upstream.
func TestBodyPastItsDeclaredLengthIsRefused(t *testing.T) {
	const limit = 256
	p, got := bodyLimitedProxy(t, limit)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","pad":"` + strings.Repeat("a", 1<<20) + `"}}`
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 10 // declared within the limit; the reader yields 1 MiB
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	select {
	case b := <-got:
		t.Errorf("a body of %d bytes past a limit of %d reached the upstream (status %d)", len(b), limit, rec.Code)
	default:
	}
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", rec.Code)
	}
}
