// Package demo owns the embedded demo upstream: a small go-sdk MCP server
// that `skills-sidecar` runs in process when no --upstream is given, so the
// quick start needs nothing but the binary. It offers a few tools, a text and
// a blob resource, and nothing about skills: those come from the sidecar.
//
// It is also a convenient real MCP peer for tests. It must not depend on the
// sidecar's own packages, so that it stays a fair stand-in for a foreign
// server.
package demo

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the demo server's reported version.
const Version = "1.0.0"

// logoPNG is a 1x1 transparent PNG, served as the blob resource.
const logoPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// ReadmeText is the text of the demo's text resource.
const ReadmeText = "# Demo upstream\n\nThis MCP server is embedded in skills-sidecar for the quick start.\n" +
	"Its tools and resources reach you through the sidecar untouched; skills/list,\n" +
	"skills/get and agents/* are answered by the sidecar from its plugin folder.\n"

// NewServer returns the demo MCP server: tools echo, add and countdown (which
// reports progress), the text resource demo://readme and the blob resource
// demo://logo.png.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "skills-sidecar-demo", Version: Version}, nil)

	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo back"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})

	type addIn struct {
		A float64 `json:"a" jsonschema:"first addend"`
		B float64 `json:"b" jsonschema:"second addend"`
	}
	type addOut struct {
		Sum float64 `json:"sum"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})

	type countIn struct {
		N int `json:"n" jsonschema:"how many progress steps, 1 to 20"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "countdown", Description: "Count down from n, reporting progress each step."},
		func(ctx context.Context, req *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
			n := min(max(in.N, 1), 20)
			token := req.Params.GetProgressToken()
			for i := range n {
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i + 1), Total: float64(n),
						Message: fmt.Sprintf("%d left", n-i-1),
					})
				}
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "liftoff"}}}, nil, nil
		})

	// The example plugin's billing-triage agent names these two tools, so
	// agents/get resolves them against this server's tools/list.
	type invoiceIn struct {
		InvoiceID string `json:"invoice_id" jsonschema:"the invoice to look up, e.g. INV-1001"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup_invoice", Description: "Look up an invoice by id (demo data)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in invoiceIn) (*mcp.CallToolResult, any, error) {
			text := fmt.Sprintf("invoice %s: 2 x Pro seat, 49.00 EUR each, paid twice on 2026-11-02", in.InvoiceID)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	type refundIn struct {
		InvoiceID string  `json:"invoice_id" jsonschema:"the invoice to refund"`
		Amount    float64 `json:"amount" jsonschema:"amount to refund, in the invoice currency"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "issue_refund", Description: "Issue a refund against an invoice (demo: nothing is charged)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in refundIn) (*mcp.CallToolResult, any, error) {
			text := fmt.Sprintf("refund of %.2f issued against %s (demo)", in.Amount, in.InvoiceID)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})

	s.AddResource(&mcp.Resource{URI: "demo://readme", Name: "readme", MIMEType: "text/markdown", Description: "About the demo upstream."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: ReadmeText}}}, nil
		})
	logo, _ := base64.StdEncoding.DecodeString(logoPNG)
	s.AddResource(&mcp.Resource{URI: "demo://logo.png", Name: "logo", MIMEType: "image/png", Description: "A one-pixel PNG."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: logo}}}, nil
		})
	return s
}

// Handler returns the demo server as a streamable HTTP handler to mount at
// /mcp. nil opts means stateful with SSE replies (the legacy era, with
// sessions and GET streams); Stateless gives the 2026-07-28 era.
func Handler(opts *mcp.StreamableHTTPOptions) http.Handler {
	s := NewServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts)
}

// BothEras returns the demo server as one handler for both protocol eras:
// a request whose MCP-Protocol-Version header names 2026-07-28 or later
// goes to a stateless handler, every other one to a stateful handler with
// sessions, GET streams and DELETE, both over one *mcp.Server. go-sdk
// v1.8.0 accepts 2026-07-28 requests only with Stateless set and keeps
// legacy sessions only without it, so serving both takes two handlers.
func BothEras() http.Handler {
	s := NewServer()
	get := func(*http.Request) *mcp.Server { return s }
	return eraMux{
		legacy: mcp.NewStreamableHTTPHandler(get, nil),
		modern: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}),
	}
}

// modernVersion is the first protocol version of the stateless era. Dates
// compare as strings.
const modernVersion = "2026-07-28"

type eraMux struct{ legacy, modern http.Handler }

func (m eraMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Protocol-Version") >= modernVersion {
		m.modern.ServeHTTP(w, r)
		return
	}
	m.legacy.ServeHTTP(w, r)
}

// Start serves the demo, both eras, on a new loopback port and returns its
// MCP URL and a function that stops it. It stops by itself when ctx is done.
func Start(ctx context.Context) (url string, stop func(), err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for demo upstream: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", BothEras())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		_ = srv.Close()
	}()
	var closed bool
	stop = func() {
		if !closed {
			closed = true
			close(done)
		}
	}
	return "http://" + ln.Addr().String() + "/mcp", stop, nil
}
