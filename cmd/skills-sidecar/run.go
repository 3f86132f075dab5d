package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/inject"
	"github.com/skills-sidecar/skills-sidecar/internal/lint"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionkeys"
	"github.com/skills-sidecar/skills-sidecar/internal/verify"
)

// version is the release this tree is (the newest dated release of
// CHANGELOG.md, as the chart's version and appVersion are: a test keeps them
// in step); a build may stamp another with -ldflags "-X main.version=…".
// commit is stamped the same way; unstamped, it falls back to the VCS
// revision Go records when it builds inside a git checkout; an image build
// has no .git, so the Dockerfile stamps it.
var (
	version = "0.3.0"
	commit  = ""
)

// Exit codes of the process.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// run is the whole program: it dispatches the subcommand and returns the
// process's exit code. environ is the process environment ("K=V" strings).
func run(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 && isHelp(args[0]) {
		cmd = "help" // the program's help lists the commands before serve's flags
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, environ, stdout, stderr)
	case "lint":
		return lint.Run(ctx, args, stdout, stderr)
	case "verify":
		return verify.Run(ctx, args, stdout, stderr)
	case "inject":
		return inject.RunInject(ctx, args, inject.Host{Getenv: getenvFrom(environ), Version: version}, stdin, stdout, stderr)
	case "webhook":
		return inject.RunWebhook(ctx, args, inject.Host{Getenv: getenvFrom(environ), Version: version}, stdout, stderr)
	case "session-keys":
		return sessionkeys.RunCLI(args, stdin, stdout, stderr)
	case "install-self":
		return runInstallSelf(args, stdout, stderr)
	case "version":
		return runVersion(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		fmt.Fprint(stdout, "\nFlags of serve (each is also an environment variable and a pod annotation; see docs/configuration.md):\n")
		_, _ = loadConfig([]string{"-h"}, nil, nil, stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "skills-sidecar: unknown command %q%s\n\n%s", cmd, suggestCommand(cmd), usage)
		return exitUsage
	}
}

// commands are the subcommands run dispatches.
var commands = []string{"serve", "lint", "verify", "inject", "webhook", "session-keys", "install-self", "version", "help"}

func suggestCommand(cmd string) string {
	if s := config.Suggest(cmd, commands); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

const usage = `Usage:
  skills-sidecar [serve] [flags]                 run the sidecar (the default command)
  skills-sidecar lint [flags] DIR                check a plugin folder as the sidecar would load it
  skills-sidecar verify [flags] URL              check any skills server the way a strict host does
  skills-sidecar inject -f FILE|- [flags]        add the sidecar to Kubernetes manifests (offline)
  skills-sidecar inject configmap --name N DIR   turn a plugin folder into ConfigMaps
  skills-sidecar webhook --tls-cert-file F --tls-key-file F
                                                 serve the injection as a mutating admission webhook
  skills-sidecar session-keys new|add|promote|drop
                                                 make a session key, or rotate a keys file (stdin)
  skills-sidecar install-self DIR                copy this binary to DIR (the injector's init
                                                 container for a stdio server, docs/stdio.md)
  skills-sidecar version                         print the version

Run "skills-sidecar serve -h" for serve's flags alone, "skills-sidecar COMMAND -h"
for another command's.
`

// getenvFrom looks keys up in an environ list.
func getenvFrom(environ []string) func(string) string {
	return func(k string) string {
		for _, kv := range environ {
			if n, v, ok := strings.Cut(kv, "="); ok && n == k {
				return v
			}
		}
		return ""
	}
}

// runVersion prints the version. It takes no argument, and refuses one
// as every other command refuses what it does not take.
func runVersion(args []string, stdout, stderr io.Writer) int {
	const use = "Usage: skills-sidecar version\n\nPrints the version and the commit it was built from.\n"
	switch {
	case len(args) == 0:
		fmt.Fprintln(stdout, versionString())
		return exitOK
	case len(args) == 1 && isHelp(args[0]):
		fmt.Fprint(stdout, use)
		return exitOK
	}
	fmt.Fprintf(stderr, "skills-sidecar version: unexpected argument %q\n\n%s", args[0], use)
	return exitUsage
}

func versionString() string {
	c := commit
	if c == "" {
		c = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	return fmt.Sprintf("skills-sidecar %s (commit %s)", version, c)
}

// loadConfig reads the configuration in its precedence; the annotations file
// is found from the other sources first.
// usage receives the flags when args ask for help.
func loadConfig(args, environ []string, readFile func(string) ([]byte, error), usage io.Writer) (config.Config, error) {
	first, _, err := config.Load(config.Sources{Environ: environ, Args: args, Usage: usage})
	if err != nil {
		return first, err
	}
	ann, err := config.ReadAnnotations(readFile, first.AnnotationsFile)
	if err != nil {
		return first, err
	}
	cfg, rest, err := config.Load(config.Sources{Annotations: ann, Environ: environ, Args: args})
	if err != nil || len(rest) == 0 {
		return cfg, err
	}
	// serve [flags] -- CMD ARGS...: the command after "--" is a stdio
	// upstream, and as a flag it outranks every other source.
	if i := slices.Index(args, "--"); i < 0 || !slices.Equal(rest, args[i+1:]) {
		return cfg, fmt.Errorf("serve: unexpected argument %q (a stdio upstream command goes after --)", rest[0])
	}
	b, _ := json.Marshal(rest)
	cfg.UpstreamCommand = string(b)
	return cfg, cfg.Validate()
}
