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
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go onSignals(sigs, cancel, os.Exit)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}

// onSignals cancels run's context on the first signal sigs receives, which
// starts the graceful drain, and ends the process on the second, with 128
// plus its number, as a shell reports a process a signal ended: an
// operator's second Ctrl-C or kill cuts a long drain short. The signals
// stay registered for that, rather than going back to their default
// action, which a process that is PID 1 in its container never takes.
func onSignals(sigs <-chan os.Signal, cancel func(), exit func(int)) {
	<-sigs
	cancel()
	code := exitFail
	if n, ok := (<-sigs).(syscall.Signal); ok {
		code = 128 + int(n)
	}
	exit(code)
}
