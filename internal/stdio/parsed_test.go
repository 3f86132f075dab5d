package stdio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
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

// closeCount is a body that counts its Close, and fails its reads when
// failRead is set.
type closeCount struct {
	io.Reader
	closed   int
	failRead bool
}

func (c *closeCount) Read(p []byte) (int, error) {
	if c.failRead {
		return 0, errors.New("the client's connection broke")
	}
	return c.Reader.Read(p)
}
func (c *closeCount) Close() error { c.closed++; return nil }

// readMessage: a message, known or read, is ok; a body that holds none is
// not, with the id when one was found; a failed read is an error, a body
// over the limit errTooLarge; the body is closed once in every case.
func TestReadMessage(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}`
	for name, c := range map[string]struct {
		body     string
		limit    int64 // 1 KiB when 0
		failRead bool
		pastEnd  bool // the body goes on, spaces then a failing read, after limit+1 bytes
		wantOK   bool
		wantID   string
		wantErr  bool
		want413  bool
	}{
		"a message":              {body: call, wantOK: true, wantID: "4"},
		"not JSON":               {body: `nope`},
		"no jsonrpc 2.0, its id": {body: `{"jsonrpc":"1.0","id":9,"method":"x"}`, wantID: "9"},
		"a batch":                {body: `[` + call + `]`},
		"a read that fails":      {body: call, failRead: true, wantErr: true},
		"an empty body":          {body: ``},
		"exactly the limit":      {body: call, limit: int64(len(call)), wantOK: true, wantID: "4"},
		"a byte over the limit":  {body: call, limit: int64(len(call)) - 1, wantErr: true, want413: true},
		"read no further than a byte past the limit": {body: call, limit: int64(len(call)) - 1, pastEnd: true, wantErr: true, want413: true},
	} {
		t.Run(name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(c.body)
			if c.pastEnd {
				r = io.MultiReader(r, io.LimitReader(spaces{}, 1<<10), &closeCount{failRead: true})
			}
			b := &closeCount{Reader: r, failRead: c.failRead}
			req, _ := http.NewRequest(http.MethodPost, "http://stdio.invalid/mcp", nil)
			req.Body = b
			limit := c.limit
			if limit == 0 {
				limit = 1 << 10
			}
			m, ok, err := readMessage(req, limit)
			if (err != nil) != c.wantErr || ok != c.wantOK || string(m.ID) != c.wantID {
				t.Errorf("readMessage = id %s, ok %v, %v; want id %q, ok %v, error %v", m.ID, ok, err, c.wantID, c.wantOK, c.wantErr)
			}
			if errors.Is(err, errTooLarge) != c.want413 {
				t.Errorf("readMessage error %v; want errTooLarge: %v", err, c.want413)
			}
			if b.closed != 1 {
				t.Errorf("the body closed %d times, want once", b.closed)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, "http://stdio.invalid/mcp", nil)
	if _, ok, err := readMessage(req, 1<<10); ok || err != nil {
		t.Errorf("readMessage of no body: ok %v, %v; want no message and no error", ok, err)
	}
}

// A POST that holds no JSON-RPC message is refused with 400 and the id it
// carried, before its session's process is asked.
func TestNotAMessageIs400(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	sid := initialize(t, tr)
	e := do(t, tr, "POST", sid, `{"jsonrpc":"1.0","id":9,"method":"tools/list"}`, nil)
	if e.status != http.StatusBadRequest || e.last()["id"] != float64(9) {
		t.Errorf("POST of no message in a session = %d %v, want 400 with id 9", e.status, e.msgs)
	}
}

// A body the adapter reads itself (here a plain one, as the era bridge's
// translation of a message is) that runs past maxBody is refused with 413
// and the proxy's JSON-RPC error for a body over its limit, instead of
// being cut and misread.
func TestBodyOverLimitIs413(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	sid := initialize(t, tr)
	// A JSON string of spaces inside a message, one byte over the limit.
	head := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	tail := `"}}}`
	pad := int64(maxBody) + 1 - int64(len(head)+len(tail))
	body := io.MultiReader(strings.NewReader(head), io.LimitReader(spaces{}, pad), strings.NewReader(tail))
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://stdio.invalid/mcp", body)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	want := reply.ErrorMessage(nil, &reply.Error{Code: reply.CodeInvalidRequest, Message: "request body larger than 67108864 bytes"})
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Equal(got, want) {
		t.Errorf("a body of maxBody+1 bytes = %d %s, want 413 %s", resp.StatusCode, got, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("its Content-Type %q, want application/json", ct)
	}
}

// spaces reads as an endless run of spaces.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
