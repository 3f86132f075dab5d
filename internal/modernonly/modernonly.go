// Package modernonly owns a test peer: an MCP server that speaks the
// 2026-07-28 revision only, a go-sdk server (its supported versions
// narrowed to 2026-07-28, the stateless handler) behind a front written
// from that revision's text, not from the sidecar's code, that refuses
// legacy traffic as a modern-only server does:
//
//   - versioning page, Compatibility Matrix, row Legacy client / Modern
//     server, on HTTP: the legacy request "is missing the required headers
//     and is rejected per server validation with 400 Bad Request": a
//     HeaderMismatch (-32020) error (streamable-http page, Server
//     Validation: a required standard header, MCP-Protocol-Version or
//     Mcp-Method, missing); a request without the _meta protocolVersion is
//     refused the same way;
//   - versioning page: a modern-only server SHOULD name the protocol
//     versions it supports in any error it returns to an initialize;
//   - streamable-http page, Earlier Streamable HTTP Revisions: GET and
//     DELETE answered 405; an Mcp-Session-Id ignored, never minted or
//     echoed; a Last-Event-ID ignored.
//
// Nothing in the sidecar imports it.
package modernonly

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the one protocol version the peer speaks.
const Version = "2026-07-28"

// ReadmeText is the text of its resource demo://readme.
const ReadmeText = "# modern-only peer\n\nA & B < C: bytes that must arrive as sent.\n"

// NewServer is the peer's go-sdk server: tools add and echo, the resource
// demo://readme, supported versions 2026-07-28 only.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "modern-only-peer", Version: "1.0.0"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{Version}, Instructions: "A modern-only test peer."})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type addOut struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "demo://readme", Name: "readme", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: ReadmeText}}}, nil
		})
	return s
}

// Handler returns the peer to mount at /mcp: s behind the modern-only
// front.
func Handler(s *mcp.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	return front{next: h}
}

type front struct{ next http.Handler }

func (f front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodDelete {
		w.Header().Set("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	r.Header.Del("Mcp-Session-Id")
	r.Header.Del("Last-Event-Id")
	if r.Method != http.MethodPost {
		f.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if refusal := legacyRefusal(r.Header, body); refusal != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(refusal)
		return
	}
	f.next.ServeHTTP(w, r)
}

// legacyRefusal is the answer to a request without the 2026-07-28 request
// metadata, or nil for one that has it (or is not one JSON-RPC message,
// which the SDK answers itself).
func legacyRefusal(h http.Header, body []byte) []byte {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return nil
	}
	var missing []string
	for _, k := range []string{"MCP-Protocol-Version", "Mcp-Method"} {
		if h.Get(k) == "" {
			missing = append(missing, k)
		}
	}
	_, hasVersion := msg.Params.Meta["io.modelcontextprotocol/protocolVersion"]
	if msg.Method != "initialize" && len(missing) == 0 && hasVersion {
		return nil
	}
	message := "Header mismatch: request carries no _meta io.modelcontextprotocol/protocolVersion"
	if len(missing) > 0 {
		message = "Header mismatch: required header " + strings.Join(missing, ", ") + " missing"
	}
	if msg.Method == "initialize" {
		message = "initialize is not part of MCP " + Version + "; this server supports only protocol version " + Version + " (" + message + ")"
	}
	id := msg.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32020, "message": message, "data": map[string]any{"supported": []string{Version}}}})
	return b
}
