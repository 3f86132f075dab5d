// Command demo-upstream runs the embedded demo MCP server on its own, for
// end-to-end scripts and benchmarks that need a go-sdk upstream in a given
// mode: stateful (legacy era, the default), --stateless (the 2026-07-28
// era), either with --json replies instead of SSE.
//
//	demo-upstream --listen 127.0.0.1:3001 [--stateless] [--json]
//
// The MCP endpoint is /mcp. It prints "ready URL" on stdout once listening
// and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-upstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	stateless := fs.Bool("stateless", false, "serve the stateless 2026-07-28 era (no sessions, no GET streams)")
	jsonReplies := fs.Bool("json", false, "reply with application/json instead of SSE")
	skillFiles := fs.String("skill-files", "", "a plugin's skills/ folder: serve its SKILL.md files and examples/ files itself, as CRLF")
	drift := fs.Bool("drift", false, "with --skill-files: change a file's bytes after its first read")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s := demo.NewServer()
	if *skillFiles != "" {
		n, err := demo.SkillFiles(s, *skillFiles, *drift)
		if err != nil || n == 0 {
			fmt.Fprintf(stderr, "demo-upstream: --skill-files %s: %d files, %v\n", *skillFiles, n, err)
			return 1
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "demo-upstream: %v\n", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: *stateless, JSONResponse: *jsonReplies}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(stdout, "ready http://%s/mcp\n", ln.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}
