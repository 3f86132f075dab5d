package verify

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/flagargs"
)

// Exit codes of Run.
const (
	ExitOK            = 0 // every check passed (warnings allowed)
	ExitNonconformant = 1 // at least one check failed
	ExitUsage         = 2 // bad flags or arguments
	ExitAuth          = 3 // the server answered 401 or 403
	ExitUnreachable   = 4 // no HTTP response, or --timeout ran out
)

const usage = `usage: skills-sidecar verify URL [--era auto|legacy|modern] [--header 'K: V']...
       [--format text|json] [--max-bytes N] [--max-skills N] [--max-pages N]
       [--timeout D] [--require-digests]

Connects to the MCP server at URL and checks it the way a strict host does
(SEP-2640 Skills extension, agents extension draft): declarations, every
skills/list page, each entry's shape, name, manifest and limits, every listed
file read back (size, then digest), SKILL.md frontmatter compared field by
field, skills/get, resources/directory/read when declared, and each agent's
tools against tools/list.

Exit status: 0 clean (warnings allowed), 1 nonconformant, 2 usage error,
3 authorization required (HTTP 401/403), 4 unreachable or timed out.

Flags:
`

// headerFlags collects repeated --header values.
type headerFlags struct{ h http.Header }

func (f *headerFlags) String() string { return "" }

func (f *headerFlags) Set(s string) error {
	k, v, err := parseHeader(s)
	if err != nil {
		return err
	}
	f.h.Add(k, v)
	return nil
}

// Run runs `verify` with args (the words after "verify") and returns the
// exit code. The report goes to stdout, usage errors to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("verify", flag.ContinueOnError)
	fset.SetOutput(stderr)
	hdr := &headerFlags{h: http.Header{}}
	era := fset.String("era", EraAuto, "protocol `era`: auto (server/discover, falling back to initialize), legacy or modern")
	fset.Var(hdr, "header", "add `'Key: Value'` to every request (repeatable)")
	format := fset.String("format", "text", "output `format`: text or json")
	maxBytes := fset.Int64("max-bytes", DefaultMaxBytes, "largest skill file to read, in `bytes`")
	maxSkills := fset.Int("max-skills", DefaultMaxSkills, "most skills (and agents) to check")
	maxPages := fset.Int("max-pages", DefaultMaxPages, "most pages of any listing to follow")
	timeout := fset.Duration("timeout", DefaultTimeout, "bound on the whole run")
	requireDigests := fset.Bool("require-digests", false, "fail a skill whose resources are \"dynamic\" (default: warn)")
	fset.Usage = func() {
		fmt.Fprint(stderr, usage)
		fset.PrintDefaults()
	}
	urls, err := flagargs.Parse(fset, args)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		return ExitUsage
	}
	if err := checkArgs(urls, *era, *format, *maxBytes, *maxSkills, *maxPages, *timeout); err != nil {
		fmt.Fprintf(stderr, "verify: %v\n", err)
		fset.Usage()
		return ExitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep := Verify(ctx, Options{URL: urls[0], Era: *era, Header: hdr.h, MaxBytes: *maxBytes,
		MaxSkills: *maxSkills, MaxPages: *maxPages, RequireDigests: *requireDigests})
	if *format == "json" {
		err = rep.writeJSON(stdout)
	} else {
		err = rep.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "verify: write report: %v\n", err)
	}
	return rep.ExitCode
}

func checkArgs(urls []string, era, format string, maxBytes int64, maxSkills, maxPages int, timeout time.Duration) error {
	if len(urls) != 1 {
		return fmt.Errorf("want exactly one server URL, got %d", len(urls))
	}
	u, err := url.Parse(urls[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", urls[0])
	}
	switch {
	case era != EraAuto && era != EraLegacy && era != EraModern:
		return fmt.Errorf("--era %q is not auto, legacy or modern", era)
	case format != "text" && format != "json":
		return fmt.Errorf("--format %q is neither text nor json", format)
	case maxBytes <= 0 || maxSkills <= 0 || maxPages <= 0:
		return errors.New("--max-bytes, --max-skills and --max-pages must be positive")
	case timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	return nil
}
