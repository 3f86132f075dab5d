package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Options shape one soak run; each field is a flag.
type Options struct {
	Duration, Warmup, Settle  time.Duration
	Workers, StreamWorkers    int
	MaxRequests               int64
	Skills, Reloads, PageSize int
	StreamHold                time.Duration
	RequestTimeout            time.Duration
	Outage                    time.Duration
	SessionRequests           int
	Tolerance                 Tolerance
	JSONPath                  string
	SidecarBin, UpstreamBin   string
	Race                      bool
	KeepOld                   bool
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

func parseOptions(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "how long the load runs (after warm-up)")
	fs.DurationVar(&o.Warmup, "warmup", 5*time.Second, "load before the baseline is taken, so pools are filled")
	fs.DurationVar(&o.Settle, "settle", 10*time.Second, "longest wait after the load for goroutines and descriptors to come back to the baseline")
	fs.IntVar(&o.Workers, "workers", 16, "concurrent clients; a quarter of them (at least one) hold GET streams")
	fs.Int64Var(&o.MaxRequests, "max-requests", 2_000_000, "cap on the requests of the whole run")
	fs.IntVar(&o.Skills, "skills", 50, "skills in the plugin folder")
	fs.IntVar(&o.Reloads, "reloads", 5, "swaps of the plugin folder's ..data link during the load")
	fs.IntVar(&o.PageSize, "page-size", 8, "the sidecar's --page-size, so that skills/list walks follow cursors")
	fs.DurationVar(&o.StreamHold, "stream-hold", 5*time.Second, "longest a GET stream is held open")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 30*time.Second, "client timeout of one request; a request that hits it hung")
	fs.DurationVar(&o.Outage, "outage", time.Second, "how long the upstream stays down when it is restarted")
	fs.IntVar(&o.SessionRequests, "session-requests", 250, "requests per session before a request worker ends it and opens another")
	fs.IntVar(&o.Tolerance.Goroutines, "leak-goroutines", 10, "goroutines allowed above the baseline after the load")
	fs.IntVar(&o.Tolerance.FDs, "leak-fds", 5, "file descriptors allowed above the baseline after the load")
	fs.StringVar(&o.JSONPath, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&o.SidecarBin, "sidecar-bin", "", "prebuilt skills-sidecar (default: go build ./cmd/skills-sidecar)")
	fs.StringVar(&o.UpstreamBin, "upstream-bin", "", "prebuilt demo-upstream (default: go build ./cmd/demo-upstream)")
	fs.BoolVar(&o.Race, "race", false, "build both binaries with the race detector")
	fs.BoolVar(&o.KeepOld, "keep-old-revisions", false, "leave each replaced plugin revision on disk (the kubelet removes it right after the swap)")
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.Duration <= 0 || o.Duration > time.Hour:
		return Options{}, fmt.Errorf("-duration %v: want more than 0 and at most 1h", o.Duration)
	case o.Workers < 2 || o.Workers > 256:
		return Options{}, fmt.Errorf("-workers %d: want 2 to 256", o.Workers)
	case o.Skills < 1 || o.PageSize < 1 || o.Reloads < 0 || o.MaxRequests < 1 || o.SessionRequests < 2:
		return Options{}, fmt.Errorf("-skills, -page-size, -max-requests and -session-requests must be positive and -reloads not negative")
	case o.StreamHold <= 0 || o.RequestTimeout <= 0 || o.Outage < 0 || o.Warmup < 0 || o.Settle <= 0:
		return Options{}, fmt.Errorf("-stream-hold, -request-timeout and -settle must be positive, -outage and -warmup not negative")
	}
	o.StreamWorkers = max(1, o.Workers/4)
	o.Workers -= o.StreamWorkers
	return o, nil
}

// run is the soak: exit 0 when every check passed, 1 when one failed or the
// run could not be set up, 2 on bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "soak: %v\n", err)
		}
		return 2
	}
	o.Progress = stderr
	rep, err := Soak(ctx, o)
	if rep != nil {
		rep.Print(stdout)
		if o.JSONPath != "" {
			if err := rep.WriteJSON(o.JSONPath); err != nil {
				fmt.Fprintf(stderr, "soak: %v\n", err)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
	}
	if rep.Failed > 0 {
		return 1
	}
	return 0
}
