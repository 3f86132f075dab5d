package stdio

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// knownBody is a request body that knows its message (rewrite.Parsed), as
// the proxy's bodies do, and counts every read of its bytes.
type knownBody struct {
	bytes.Reader
	msg   rewrite.Message
	reads int
}

func (b *knownBody) ParsedMessage() (rewrite.Message, bool) { return b.msg, true }
func (b *knownBody) Read(p []byte) (int, error)             { b.reads++; return b.Reader.Read(p) }
func (b *knownBody) Close() error                           { return nil }

// A request whose body knows its message is answered from that message,
// its bytes never read again; a plain body is read and parsed (every
// other test here sends one).
func TestKnownMessageIsNotReadAgain(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	sid := initialize(t, tr)
	call := toolCall(5, "echo", map[string]any{"text": "known"})
	b := &knownBody{}
	b.Reset([]byte(call))
	b.msg, _ = rewrite.ParseMessage([]byte(call))
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://stdio.invalid/mcp", nil)
	req.Body = b
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got bytes.Buffer
	_, _ = got.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(got.Bytes(), []byte(`"text":"known"`)) {
		t.Fatalf("reply %d %s, want the echo", resp.StatusCode, got.Bytes())
	}
	if b.reads > 0 {
		t.Errorf("the body was read %d times: its message parsed again", b.reads)
	}
}
