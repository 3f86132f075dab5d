package proxy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

// TestFailureHoldsNoSecrets: a call made on a caller's behalf that fails
// carries, in its reply, what happened and neither the upstream URL
// (userinfo, a token in the query) nor socket addresses, which net/http's
// client puts in its errors; the upstream's refusal is passed on as its
// own, with the caller's id, and a JSON-RPC error as it is.
func TestFailureHoldsNoSecrets(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 3000},
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	leaky := &url.Error{Op: "Post", URL: "http://operator@10.1.2.3:3000/mcp?token=s3cret", Err: dial}
	refused := &onbehalf.Refusal{Status: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {"Bearer"}},
		Body: []byte(`{"jsonrpc":"2.0","id":"skills-sidecar/call/x","error":{"code":-32001,"message":"no"}}`)}
	for _, tt := range []struct {
		name    string
		err     error
		status  int
		code    int
		message string
	}{
		{"a bad reply", fmt.Errorf("upstream tools/list: %w", leaky), http.StatusBadGateway, reply.CodeInternalError, "upstream refused the connection"},
		{"no reply", fmt.Errorf("upstream tools/list: %w: %w", onbehalf.ErrUnreachable, leaky), http.StatusBadGateway, reply.CodeInternalError, "upstream refused the connection"},
		{"a refusal", fmt.Errorf("resolve agent tools: %w", refused), http.StatusUnauthorized, -32001, "no"},
		{"a protocol error", &reply.Error{Status: http.StatusOK, Code: reply.CodeInvalidParams, Message: "bad"}, http.StatusOK, reply.CodeInvalidParams, "bad"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			proxy.WriteReply(w, json.RawMessage(`"caller-1"`), reply.Reply{Err: tt.err, Result: []byte(`{}`)})
			for _, leak := range []string{"s3cret", "operator", "10.1.2.3", "3000"} {
				if strings.Contains(w.Body.String(), leak) {
					t.Errorf("reply %s carries %q", w.Body, leak)
				}
			}
			var got struct {
				ID    string `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("reply %s: %v", w.Body, err)
			}
			if w.Code != tt.status || got.ID != "caller-1" || got.Error.Code != tt.code || got.Error.Message != tt.message {
				t.Errorf("reply = %d %s, want %d id caller-1 code %d %q", w.Code, w.Body, tt.status, tt.code, tt.message)
			}
		})
	}
}
