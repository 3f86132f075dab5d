package sidecar

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRoutesDecideAsTheMux: the shortcut to the endpoint decides every
// request target as net/http's ServeMux with the same patterns does (the
// judge): same status, body and redirect, for clean, unclean, escaped,
// absolute-form and CONNECT targets.
func TestRoutesDecideAsTheMux(t *testing.T) {
	t.Parallel()
	endpoint := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "endpoint "+r.Method+" "+r.URL.Path)
	})
	h := endpointRoutes(endpoint)
	targets := []string{
		"POST /mcp", "GET /mcp", "DELETE /mcp", "POST /mcp/", "GET /mcp/?a=1", "POST /mcp?x=1",
		"POST /mcp/x", "POST /mcp//", "POST //mcp", "POST /./mcp", "POST /mcp/../mcp", "POST /mcp/.",
		"POST /m%63p", "POST /mcp%2F", "POST /mcp%2f", "POST /MCP", "POST /mcpx", "POST /",
		"POST http://example.test/mcp", "POST http://example.test/mcp/x",
		"CONNECT /mcp", "CONNECT /mcp/", "CONNECT example.test:443", "OPTIONS *",
	}
	for _, target := range targets {
		serve := func(hh http.Handler) *httptest.ResponseRecorder {
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(target + " HTTP/1.1\r\nHost: example.test\r\n\r\n")))
			if err != nil {
				t.Fatalf("%s: %v", target, err)
			}
			w := httptest.NewRecorder()
			hh.ServeHTTP(w, r)
			return w
		}
		got, want := serve(h), serve(h.mux)
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Location") != want.Header().Get("Location") {
			t.Errorf("%s: routes gave %d %q (Location %q), the mux %d %q (Location %q)", target,
				got.Code, got.Body, got.Header().Get("Location"), want.Code, want.Body, want.Header().Get("Location"))
		}
	}
	// The shortcut is taken: the endpoint's path needs no mux.
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	w := httptest.NewRecorder()
	routes{endpoint: endpoint}.ServeHTTP(w, r)
	if w.Body.String() != "endpoint POST /mcp" {
		t.Errorf("POST /mcp without the mux: %d %q", w.Code, w.Body)
	}
}
