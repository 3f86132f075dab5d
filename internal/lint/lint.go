// Package lint implements the `skills-sidecar lint` subcommand: it loads a
// plugin folder with the same loader the sidecar serves from
// (internal/catalog), prints every skipped or warned item with its file and
// reason and a summary of what would be served, and exits 0 when nothing was
// skipped, 1 when something was and 2 on usage errors. Plugin authors run it
// in CI.
//
// It owns the command's flags, output formats and exit codes; it must not
// judge a plugin by any rule of its own (every rule lives in the catalog, so
// lint and the sidecar can never disagree), and it writes only to the
// writers it is given.
package lint

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/flagargs"
)

// Exit codes of Run.
const (
	ExitOK      = 0 // nothing was skipped (warnings allowed)
	ExitSkipped = 1 // at least one item would be skipped
	ExitUsage   = 2 // bad flags or arguments, or a folder that cannot be read
)

const usage = `usage: skills-sidecar lint [--format text|json] [--limit-mode skip|warn]
       [--frontmatter-portability skip|warn] [--layout tree|configmaps] DIR

Loads the plugin folder DIR (skills/, agents/, .claude-plugin/plugin.json) the
way the sidecar does and prints every item it would skip or warn about, with
its file and reason, then what it would serve. With --layout configmaps, DIR
holds one folder per ConfigMap (as the injector mounts them under
/etc/skills-sidecar/plugin, or as written by kubectl get configmap and
copied out key by key), each key a path encoded by inject configmap.

A SKILL.md whose frontmatter has a plain value or key that YAML 1.1 readers
(PyYAML, with which Python hosts verify an install) type differently, such
as yes, on, 0755, 1:30, 1_000, 1e3 or a timestamp with a time, is reported
with the line, the key and the quoted spelling that fixes it.

Exit status: 0 when nothing is skipped, 1 when something is, 2 on usage
errors or when DIR cannot be read.

Flags:
`

// Run runs `lint` with args (the words after "lint") and returns the exit
// code. Reports go to stdout, usage errors to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("lint", flag.ContinueOnError)
	fset.SetOutput(stderr)
	format := fset.String("format", "text", "output `format`: text or json")
	limitMode := fset.String("limit-mode", catalog.LimitSkip, "what happens to a skill over 512 files or 16 MiB: skip or warn (match the sidecar's setting)")
	portability := fset.String("frontmatter-portability", catalog.PortabilitySkip, "what happens to a skill whose frontmatter YAML 1.1 hosts read differently: skip or warn (match the sidecar's setting)")
	layout := fset.String("layout", catalog.LayoutTree, "how DIR holds the plugin: tree (the plugin folder) or configmaps (one folder per mounted ConfigMap; match the sidecar's --plugin-layout)")
	fset.Usage = func() {
		fmt.Fprint(stderr, usage)
		fset.PrintDefaults()
	}
	dirs, err := flagargs.Parse(fset, args)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		return ExitUsage // flag already printed the error and usage
	}
	if len(dirs) != 1 {
		fmt.Fprintf(stderr, "lint: want exactly one plugin folder, got %d\n", len(dirs))
		fset.Usage()
		return ExitUsage
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "lint: --format %q is neither text nor json\n", *format)
		return ExitUsage
	}
	opts := catalog.Options{LimitMode: *limitMode, Layout: *layout, FrontmatterPortability: *portability}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "lint: %v\n", err)
		return ExitUsage
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "lint: %v\n", err)
		return ExitUsage
	}
	s, err := catalog.Load(dirs[0], opts)
	if err != nil {
		fmt.Fprintf(stderr, "lint: %v\n", err)
		return ExitUsage
	}
	return report(s, *format, stdout, stderr)
}

// RunFS lints a plugin folder given as a file system (for example the
// embedded example plugin) and returns the exit code as Run would.
func RunFS(fsys fs.FS, format string, stdout, stderr io.Writer) int {
	s, err := catalog.LoadFS(fsys, catalog.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "lint: %v\n", err)
		return ExitUsage
	}
	return report(s, format, stdout, stderr)
}

func report(s *catalog.Snapshot, format string, stdout, stderr io.Writer) int {
	var err error
	if format == "json" {
		err = writeJSON(stdout, s)
	} else {
		err = writeText(stdout, s)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lint: write report: %v\n", err)
		return ExitUsage
	}
	if s.Skipped() > 0 {
		return ExitSkipped
	}
	return ExitOK
}

// writeText prints one line per problem, "FILE: skipped (KIND): REASON",
// the shape editors and CI annotators pick up, then the summary.
func writeText(w io.Writer, s *catalog.Snapshot) error {
	var b strings.Builder
	for _, p := range s.Problems() {
		verdict := "skipped"
		if p.Severity == catalog.SeverityWarn {
			verdict = "warning"
		}
		fmt.Fprintf(&b, "%s: %s (%s): %s\n", p.Path, verdict, p.Kind, p.Reason)
	}
	if len(s.Problems()) > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%s: serves %s and %s; %s skipped, %s\n", pluginLabel(s.Plugin()),
		plural(len(s.Skills()), "skill"), plural(len(s.Agents()), "agent"),
		plural(s.Skipped(), "item"), plural(len(s.Problems())-s.Skipped(), "warning"))
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, sk := range s.Skills() {
		fmt.Fprintf(tw, "  skill\t%s\t%s\t%s\n", sk.URI, plural(len(sk.Files), "file"), byteSize(sk.Size))
	}
	for _, a := range s.Agents() {
		fmt.Fprintf(tw, "  agent\t%s\t%s\t%s\n", a.Name, a.File, agentSkills(a))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pluginLabel(p catalog.PluginInfo) string {
	switch {
	case !p.Present || p.Name == "":
		return "plugin"
	case p.Version != "":
		return fmt.Sprintf("plugin %s %s", p.Name, p.Version)
	}
	return "plugin " + p.Name
}

func agentSkills(a *catalog.Agent) string {
	if len(a.Skills) == 0 {
		return "no skills"
	}
	names := make([]string, len(a.Skills))
	for i, sk := range a.Skills {
		names[i] = sk.Name
	}
	return "skills: " + strings.Join(names, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// jsonReport is the --format json document.
type jsonReport struct {
	OK       bool              `json:"ok"`
	Plugin   *jsonPlugin       `json:"plugin,omitempty"`
	Skills   []jsonSkill       `json:"skills"`
	Agents   []jsonAgent       `json:"agents"`
	Problems []catalog.Problem `json:"problems"`
	Skipped  int               `json:"skipped"`
	Warnings int               `json:"warnings"`
}

type jsonPlugin struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
}

type jsonSkill struct {
	URI   string `json:"uri"`
	Name  string `json:"name"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

type jsonAgent struct {
	Name      string   `json:"name"`
	File      string   `json:"file"`
	ModelRole string   `json:"modelRole,omitempty"`
	Skills    []string `json:"skills"`
}

func writeJSON(w io.Writer, s *catalog.Snapshot) error {
	r := jsonReport{
		OK: s.Skipped() == 0, Skills: []jsonSkill{}, Agents: []jsonAgent{}, Problems: s.Problems(),
		Skipped: s.Skipped(), Warnings: len(s.Problems()) - s.Skipped(),
	}
	if r.Problems == nil {
		r.Problems = []catalog.Problem{}
	}
	if p := s.Plugin(); p.Present {
		r.Plugin = &jsonPlugin{Name: p.Name, Description: p.Description, Version: p.Version}
	}
	for _, sk := range s.Skills() {
		r.Skills = append(r.Skills, jsonSkill{URI: sk.URI, Name: sk.Name, Files: len(sk.Files), Bytes: sk.Size})
	}
	for _, a := range s.Agents() {
		ja := jsonAgent{Name: a.Name, File: a.File, ModelRole: a.ModelRole, Skills: []string{}}
		for _, sk := range a.Skills {
			ja.Skills = append(ja.Skills, sk.URI)
		}
		r.Agents = append(r.Agents, ja)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
