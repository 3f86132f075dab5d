// Command skills-sidecar gives an existing MCP server the Skills extension
// (SEP-2640) and the agents extension without changing the server.
//
// Usage:
//
//	skills-sidecar [serve] [flags]   run the sidecar (the default)
//	skills-sidecar lint DIR          check a plugin folder
//	skills-sidecar verify URL        check a skills server as a strict host
//	skills-sidecar inject -f FILE    add the sidecar to manifests
//	skills-sidecar webhook           serve the injection as an admission webhook
//	skills-sidecar version           print the version
//
// main only wires the process to run, which is tested directly.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ownsProcess = true
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
