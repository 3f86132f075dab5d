package methods

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
)

// TestUpstreamFailureHoldsNoSecrets: a call made on a caller's behalf that
// fails carries, in its reply, what happened and neither the upstream URL
// (userinfo, a token in the query) nor socket addresses, which net/http's
// client puts in its errors. Before, the message was the error's text.
func TestUpstreamFailureHoldsNoSecrets(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 3000},
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	err := fmt.Errorf("upstream tools/list: %w", &url.Error{Op: "Post", URL: "http://operator@10.1.2.3:3000/mcp?token=s3cret", Err: dial})
	got := upstreamFailure(err)
	for _, leak := range []string{"s3cret", "operator", "10.1.2.3", "3000"} {
		if strings.Contains(got.message, leak) {
			t.Errorf("message %q carries %q", got.message, leak)
		}
	}
	if got.status != http.StatusBadGateway || got.message != "upstream refused the connection" {
		t.Errorf("upstreamFailure = %d %q, want 502 %q", got.status, got.message, "upstream refused the connection")
	}
	if ref := upstreamFailure(fmt.Errorf("x: %w", &onbehalf.Refusal{Status: 401})); ref.refusal == nil {
		t.Errorf("a refusal is not passed on as the upstream's own")
	}
}
