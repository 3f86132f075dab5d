// Package testupstream builds the go-sdk MCP servers the tests put behind
// the sidecar (or a part of it) as the upstream, and serves them on
// loopback until the test ends: Serve for a server a test has built itself,
// Start for one made from a Config (tools, resources, prompts, files, a
// bearer token, methods it does not know), which also records what reached
// it.
//
// It is a test peer only: nothing in the sidecar imports it, and it imports
// nothing of the sidecar's but package rewrite, to read the requests it
// records. It must not hold assertions (a test judges what it serves) or
// listen beyond loopback.
package testupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// TB is the part of testing.TB the package uses (it is built as
// production code, which may not import package testing).
type TB interface {
	Helper()
	Cleanup(func())
}

// Handler is go-sdk's streamable HTTP handler serving s for every request,
// with o (nil: sessions, go-sdk's defaults).
func Handler(s *mcp.Server, o *mcp.StreamableHTTPOptions) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, o)
}

// Serve serves s (see Handler) on loopback until the test ends; the
// server answers MCP at any path of its URL.
func Serve(t TB, s *mcp.Server, o *mcp.StreamableHTTPOptions) *httptest.Server {
	t.Helper()
	return ServeHandler(t, Handler(s, o))
}

// ServeHandler serves h (a go-sdk handler with something in front of it)
// on loopback until the test ends.
func ServeHandler(t TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Config says how Start builds a go-sdk upstream.
type Config struct {
	Stateless bool
	// PageSize is ServerOptions.PageSize; 0 means go-sdk's default.
	PageSize int
	// Tools are added with a handler that echoes their name.
	Tools []*mcp.Tool
	// Resources adds this many test://res/NN text resources.
	Resources int
	// Token, when set, makes every request without "Bearer <token>" a 401.
	Token string
	// NoResourcesMethod answers resources/list with -32601.
	NoResourcesMethod bool
	// NotFound are more methods answered with -32601.
	NotFound []string
	// TTLMs is the ttlMs of the upstream's cacheable results.
	TTLMs int
	// Prompts are added with a handler whose one message is the text
	// "upstream " and the prompt's name.
	Prompts []*mcp.Prompt
	// Files are resources the upstream serves itself, text by URI.
	Files map[string]string
}

// Upstream is a running go-sdk server that records what reached it.
type Upstream struct {
	// URL is the server's URL; it answers MCP at any path.
	URL string
	mu  sync.Mutex
	got []string // "method uri" of every request that reached the upstream
}

// Seen returns "method uri" for every request the upstream received.
func (u *Upstream) Seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got...)
}

// Start builds a go-sdk server as cfg says and serves it on loopback until
// the test ends.
func Start(t TB, cfg Config) *Upstream {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{PageSize: cfg.PageSize,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = cfg.TTLMs }})
	for _, tool := range cfg.Tools {
		s.AddTool(tool, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.Name}}}, nil
		})
	}
	for i := range cfg.Resources {
		uri := fmt.Sprintf("test://res/%02d", i)
		s.AddResource(&mcp.Resource{URI: uri, Name: fmt.Sprintf("res-%02d", i), MIMEType: "text/plain"},
			func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "upstream " + r.Params.URI}}}, nil
			})
	}
	for _, p := range cfg.Prompts {
		s.AddPrompt(p, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "upstream " + req.Params.Name}}}}, nil
		})
	}
	for uri, text := range cfg.Files {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"},
			func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: text}}}, nil
			})
	}
	notFound := slices.Clone(cfg.NotFound)
	if cfg.NoResourcesMethod {
		notFound = append(notFound, "resources/list")
	}
	if len(notFound) > 0 {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if slices.Contains(notFound, method) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
				}
				return next(ctx, method, req)
			}
		})
	}
	h := Handler(s, &mcp.StreamableHTTPOptions{Stateless: cfg.Stateless})
	u := &Upstream{}
	srv := ServeHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if m, err := rewrite.ParseMessage(body); err == nil && m.Kind == rewrite.KindRequest {
				var p struct {
					URI string `json:"uri"`
				}
				_ = json.Unmarshal(m.Params, &p)
				u.mu.Lock()
				u.got = append(u.got, m.Method+" "+p.URI)
				u.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if cfg.Token != "" && r.Header.Get("Authorization") != "Bearer "+cfg.Token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="upstream", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_token"}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	u.URL = srv.URL
	return u
}
