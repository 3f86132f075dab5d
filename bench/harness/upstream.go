package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstream resources and tools, shared by the server and the load generator.
const (
	// ListedTools is how many filler tools the upstream registers, so its
	// tools/list reply is about the size of a 1,000-skill skills/list.
	ListedTools = 1000
	// StatelessHeader routes a request to the upstream's stateless handler
	// whatever its era. The initialize scenario sets it so that measuring
	// thousands of initialize calls does not leave thousands of sessions.
	StatelessHeader = "Bench-Stateless"

	// The blobs are files of the plugin's first skill (on disk only as
	// placeholders) that the upstream serves itself, so the sidecar
	// forwards their reads and hashes the bytes served (--upstream-files).
	blob1MURI  = "skill://s0000/blob-1m.bin"
	blob16MURI = "skill://s0000/blob-16m.bin"
	// The same blobs under URIs no catalog lists: the sidecar relays
	// their reads without hashing them, the floor its hashed reads are
	// compared with.
	relayBlob1MURI  = "bench://blob/1m"
	relayBlob16MURI = "bench://blob/16m"
	text1MURI       = "bench://text/1m"
	text16MURI      = "bench://text/16m"
)

// NewUpstream returns the go-sdk v1.8.0 server the harness measures against,
// serving every path. Requests for protocol 2026-07-28 (by their
// MCP-Protocol-Version header) and requests with StatelessHeader go to a
// stateless handler; all others to a stateful one with sessions, GET streams
// and DELETE. Both handlers share one *mcp.Server. go-sdk v1.8.0 accepts
// 2026-07-28 requests only when StreamableHTTPOptions.Stateless is set, and
// legacy sessions only when it is not, so a dual-era upstream needs both.
func NewUpstream() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "v0.0.0"},
		&mcp.ServerOptions{PageSize: 2 * ListedTools})
	addTools(srv)
	addResources(srv)
	get := func(*http.Request) *mcp.Server { return srv }
	return eraMux{
		stateful: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			// A safety net: every session the harness opens it also deletes.
			SessionTimeout: 5 * time.Minute,
		}),
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}),
	}
}

type eraMux struct{ stateful, stateless http.Handler }

// ServeHTTP routes by era; see NewUpstream.
func (m eraMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Protocol-Version") >= ModernVersion || r.Header.Get(StatelessHeader) != "" {
		m.stateless.ServeHTTP(w, r)
		return
	}
	m.stateful.ServeHTTP(w, r)
}

type echoIn struct {
	Message string `json:"message"`
}

type progressIn struct {
	N int `json:"n"`
}

// addEcho adds the echo tool every scenario's tools/call uses.
func addEcho(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes its message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
}

func addTools(srv *mcp.Server) {
	addEcho(srv)
	addProgress(srv)
	desc := strings.Repeat("A filler tool that makes tools/list as large as a skills/list. ", 3)
	for i := range ListedTools {
		srv.AddTool(&mcp.Tool{
			Name:        fmt.Sprintf("t%04d", i),
			Description: desc,
			InputSchema: map[string]any{"type": "object"},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
}

// addProgress adds the progress tool the SSE scenarios call.
func addProgress(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "progress", Description: "Sends n progress notifications; each message is the UnixNano time it was written."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := range in.N {
				if tok == nil {
					break
				}
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok,
					Progress:      float64(i + 1),
					Total:         float64(in.N),
					Message:       strconv.FormatInt(time.Now().UnixNano(), 10),
				})
				if err != nil {
					return nil, nil, fmt.Errorf("notify progress: %w", err)
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
}

func addResources(srv *mcp.Server) {
	bySize := map[int][]byte{} // one copy of the bytes per size
	add := func(uri string, size int, blob bool) {
		data := bySize[size]
		if data == nil {
			data = make([]byte, size)
			for i := range data {
				data[i] = 'a' + byte(i%26)
			}
			bySize[size] = data
		}
		text := string(data)
		srv.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "application/octet-stream", Size: int64(size)},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				c := &mcp.ResourceContents{URI: uri, MIMEType: "application/octet-stream"}
				if blob {
					c.Blob = data
				} else {
					c.MIMEType, c.Text = "text/plain", text
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
			})
	}
	add(blob1MURI, 1<<20, true)
	add(blob16MURI, 16<<20, true)
	add(relayBlob1MURI, 1<<20, true)
	add(relayBlob16MURI, 16<<20, true)
	add(text1MURI, 1<<20, false)
	add(text16MURI, 16<<20, false)
}

// ServeOptions configures ServeUpstream and ServeBareProxy.
type ServeOptions struct {
	// Listen is the loopback address to serve on.
	Listen string
	// StatsListen, when set, serves the process's allocation counter as
	// `go_memstats_mallocs_total N` at /metrics on a second address, the
	// same line a Prometheus Go collector exposes, so one scraper reads
	// every Go target.
	StatsListen string
	// Upstream is the URL the bare proxy forwards to; unused by the upstream.
	Upstream string
	// Busy is CPU the floor spins per request on top of relaying it
	// (floorproxy -busy): a floor made to cost what another hop costs, to
	// tell what a hop's CPU does to throughput from what its bytes do. The
	// floor's whole cost rises by several times Busy: its goroutine holds
	// its thread meanwhile.
	Busy time.Duration
}

// ServeUpstream serves NewUpstream until ctx ends.
func ServeUpstream(ctx context.Context, o ServeOptions) error {
	return serve(ctx, o, NewUpstream())
}

// ServeBareProxy serves the baseline: httputil.ReverseProxy with its
// defaults except for two things. Transport is a clone of
// http.DefaultTransport with MaxIdleConnsPerHost raised from 2 to 1024;
// left at 2 it would open a new upstream connection for most requests at
// concurrency 32 and measure connection churn rather than proxying. And the
// request body is read whole before forwarding, as the sidecar must to
// route by method: streamed straight from the inbound request, about one
// reply in a hundred from a go-sdk v1.8.0 upstream in another process ends
// early ("ReverseProxy read error during body copy: use of closed network
// connection"), which would put errors in the floor. The inbound Host passes
// through, which go-sdk accepts on loopback.
func ServeBareProxy(ctx context.Context, o ServeOptions) error {
	u, err := url.Parse(o.Upstream)
	if err != nil {
		return fmt.Errorf("parse upstream %q: %w", o.Upstream, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		Transport: tr,
	}
	return serve(ctx, o, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBareBody))
			if err != nil {
				http.Error(w, "read request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		rp.ServeHTTP(w, r)
	}))
}

// maxBareBody bounds a request body the bare proxy buffers.
const maxBareBody = 64 << 20

func serve(ctx context.Context, o ServeOptions, h http.Handler) error {
	return serveWith(ctx, o, h, http.HandlerFunc(serveMallocs))
}

// serveWith serves h on o.Listen and, when o.StatsListen is set, stats on
// it, until ctx ends. The stats address listens first, so a caller that
// has found o.Listen accepting finds it accepting too.
func serveWith(ctx context.Context, o ServeOptions, h, stats http.Handler) error {
	if o.StatsListen != "" {
		sl, err := net.Listen("tcp", o.StatsListen)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", o.StatsListen, err)
		}
		ss := &http.Server{Handler: stats, ReadHeaderTimeout: 10 * time.Second}
		go ss.Serve(sl)
		defer ss.Close()
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut down: %w", err)
	}
	srv.Close()
	return nil
}

func serveMallocs(w http.ResponseWriter, _ *http.Request) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(w, "go_memstats_mallocs_total %d\n", ms.Mallocs)
}
