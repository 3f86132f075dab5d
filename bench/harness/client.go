package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Protocol versions the load generator speaks.
const (
	LegacyVersion = "2025-11-25"
	ModernVersion = "2026-07-28"
)

// Era is the protocol era of a request.
type Era int

// The two eras: sessions opened with initialize, or stateless 2026-07-28
// requests that carry their version and capabilities in params._meta.
const (
	Legacy Era = iota
	Modern
)

// String returns "legacy" or "modern".
func (e Era) String() string {
	if e == Modern {
		return "modern"
	}
	return "legacy"
}

// errReply is wrapped by every reply the harness does not accept.
var errReply = errors.New("harness: unexpected reply")

// Call is one JSON-RPC request, encoded once and sent many times.
type Call struct {
	// Method is the JSON-RPC method.
	Method string
	// Params is the params object without _meta, or "" for none.
	Params string
	// Name is the Mcp-Name header of a modern request: the tool name or
	// resource URI; "" for methods that have none.
	Name string
	// Meta is extra _meta members, e.g. `"progressToken":1`, or "".
	Meta string
}

// Body returns the request encoded for era, with id 1. A modern request gets
// the two _meta keys 2026-07-28 requires; go-sdk v1.8.0 answers -32602 to a
// request without the version and -32020 when it differs from the header.
func (c Call) Body(era Era) []byte {
	meta := c.Meta
	if era == Modern {
		m := `"io.modelcontextprotocol/protocolVersion":"` + ModernVersion + `","io.modelcontextprotocol/clientCapabilities":{}`
		meta = joinNonEmpty(",", m, meta)
	}
	params := strings.TrimSpace(c.Params)
	if meta != "" {
		if params == "" {
			params = "{}"
		}
		inner := strings.TrimSpace(params[1 : len(params)-1])
		params = "{" + joinNonEmpty(",", `"_meta":{`+meta+`}`, inner) + "}"
	}
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":`)
	b.WriteString(strconv.Quote(c.Method))
	if params != "" {
		b.WriteString(`,"params":`)
		b.WriteString(params)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// joinNonEmpty joins a and b with sep, or returns the one that is not
// empty.
func joinNonEmpty(sep, a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// Header returns the headers of the request for era. A legacy request in a
// session carries the session id and the negotiated version; a modern one
// carries MCP-Protocol-Version, Mcp-Method and, where the method has one,
// Mcp-Name, which go-sdk v1.8.0 checks against the body.
func (c Call) Header(era Era, session string) http.Header {
	h := http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json, text/event-stream"},
	}
	switch era {
	case Modern:
		h.Set("Mcp-Protocol-Version", ModernVersion)
		h.Set("Mcp-Method", c.Method)
		if c.Name != "" {
			h.Set("Mcp-Name", c.Name)
		}
	default:
		if session != "" {
			h.Set("Mcp-Session-Id", session)
			h.Set("Mcp-Protocol-Version", LegacyVersion)
		}
	}
	return h
}

// initializeParams are the params of the legacy opening request.
var initializeParams = `{"protocolVersion":"` + LegacyVersion + `","capabilities":{},"clientInfo":{"name":"skillsbench","version":"0"}}`

// InitializeCall returns the legacy initialize request.
func InitializeCall() Call { return Call{Method: "initialize", Params: initializeParams} }

// post sends body with hdr to url and reads the whole reply into buf. It
// fails unless the status is 200 and the reply holds a JSON-RPC result.
func post(ctx context.Context, c *http.Client, url string, hdr http.Header, body []byte, buf *bytes.Buffer) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header = hdr
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), []byte(`"result":`)) {
		return nil, fmt.Errorf("%w: %s: %s", errReply, resp.Status, clip(buf.Bytes(), 200))
	}
	return resp, nil
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// OpenSession runs the legacy opening handshake (initialize, then
// notifications/initialized) and returns the session id.
func OpenSession(ctx context.Context, c *http.Client, url string) (string, error) {
	return OpenSessionAs(ctx, c, url, nil, "{}")
}

// OpenSessionAs is OpenSession with extra headers on both requests (a
// caller's credentials) and the client's capabilities in initialize.
func OpenSessionAs(ctx context.Context, c *http.Client, url string, extra http.Header, capabilities string) (string, error) {
	init := InitializeCall()
	init.Params = strings.Replace(init.Params, `"capabilities":{}`, `"capabilities":`+capabilities, 1)
	withExtra := func(h http.Header) http.Header {
		for k, vs := range extra {
			h[k] = vs
		}
		return h
	}
	var buf bytes.Buffer
	resp, err := post(ctx, c, url, withExtra(init.Header(Legacy, "")), init.Body(Legacy), &buf)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return "", fmt.Errorf("initialize: %w: no Mcp-Session-Id", errReply)
	}
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(note))
	if err != nil {
		return "", fmt.Errorf("build initialized: %w", err)
	}
	req.Header = withExtra(Call{}.Header(Legacy, id))
	r2, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("initialized: %w", err)
	}
	io.Copy(io.Discard, r2.Body)
	r2.Body.Close()
	if r2.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("initialized: %w: %s", errReply, r2.Status)
	}
	return id, nil
}

// CloseSession ends a legacy session with DELETE, ignoring failures: the
// upstream's idle timeout is the safety net.
func CloseSession(c *http.Client, url, id string) { CloseSessionAs(c, url, id, nil) }

// CloseSessionAs is CloseSession with extra headers (a caller's
// credentials).
func CloseSessionAs(c *http.Client, url, id string, extra http.Header) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	if err != nil {
		return
	}
	req.Header = Call{}.Header(Legacy, id)
	for k, vs := range extra {
		req.Header[k] = vs
	}
	if resp, err := c.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// readProgress reads an SSE reply, calling rec with now minus the UnixNano
// stamp in each progress notification's message, until the response event.
func readProgress(body io.Reader, rec func(time.Duration)) error {
	br := bufio.NewReaderSize(body, 16<<10)
	msgKey := []byte(`"message":"`)
	for {
		line, err := br.ReadSlice('\n')
		now := time.Now().UnixNano()
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			switch {
			case bytes.Contains(data, []byte(`"notifications/progress"`)):
				_, rest, found := bytes.Cut(data, msgKey)
				end := bytes.IndexByte(rest, '"')
				if !found || end < 0 {
					return fmt.Errorf("%w: progress without a stamp: %s", errReply, clip(data, 200))
				}
				stamp, perr := strconv.ParseInt(string(rest[:end]), 10, 64)
				if perr != nil {
					return fmt.Errorf("%w: bad stamp: %w", errReply, perr)
				}
				rec(time.Duration(now - stamp))
			case bytes.Contains(data, []byte(`"result":`)):
				return nil
			case bytes.Contains(data, []byte(`"error":`)):
				return fmt.Errorf("%w: %s", errReply, clip(data, 200))
			}
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			return fmt.Errorf("%w: stream ended before the result: %w", errReply, err)
		}
	}
}
