package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestHandshakeReplyWithForeignIDIsNotSpliced: a JSON initialize or
// server/discover reply whose id is not the request's is forwarded as the
// upstream sent it; with the request's own id it is spliced (the control).
func TestHandshakeReplyWithForeignIDIsNotSpliced(t *testing.T) {
	t.Parallel()
	// One result for both handshakes: supportedVersions names 2026-07-28,
	// without which a server/discover reply is not spliced (era.go).
	result := `{"protocolVersion":"2025-11-25","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"}}`
	for _, tt := range []struct {
		name, replyID string
		spliced       bool
	}{
		{"own id", "7", true},
		{"foreign id", "8", false},
		{"foreign string id", `"7"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reply := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, tt.replyID, result)
			u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, reply)
			})
			for _, req := range []string{initReq,
				`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`} {
				_, b := sidecartest.Post(t, u, req, nil)
				if got := bytes.Contains(b, []byte("io.modelcontextprotocol/skills")); got != tt.spliced {
					t.Errorf("reply id %s: spliced %v, want %v: %s", tt.replyID, got, tt.spliced, b)
				}
				if !tt.spliced && string(b) != reply {
					t.Errorf("reply changed: got %s, want %s", b, reply)
				}
			}
		})
	}
}
