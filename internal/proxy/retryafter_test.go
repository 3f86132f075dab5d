package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

// TestWriteReplyRetryAfter: a refusal over a caller's share carries
// Retry-After; an error without one carries none.
func TestWriteReplyRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		after int
		want  string
	}{{3, "3"}, {0, ""}} {
		w := httptest.NewRecorder()
		WriteReply(w, []byte(`7`), reply.Reply{Err: &reply.Error{Status: http.StatusTooManyRequests, Code: reply.CodeInternalError, Message: "m", RetryAfter: tt.after}})
		if got := w.Header().Get("Retry-After"); got != tt.want || w.Code != http.StatusTooManyRequests {
			t.Errorf("RetryAfter %d: status %d, Retry-After %q, want 429 and %q", tt.after, w.Code, got, tt.want)
		}
	}
}
