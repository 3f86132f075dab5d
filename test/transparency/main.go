package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// maxChecksFile bounds one checks.json read.
const maxChecksFile = 16 << 20

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("transparency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	allowFile := fs.String("allow", "", "the reviewed allow file (UPSTREAM CONFIG SCENARIO CHECK DIRECT SIDECAR REASON per line)")
	bridged := fs.Bool("bridged", false, "era-bridge comparison: every scenario passing in a legacy-SUITE run passes in modern-SUITE through the sidecar")
	reverse := fs.Bool("reverse", false, "the reverse era-bridge comparison: every scenario passing in a modern-SUITE run passes in legacy-SUITE through the sidecar")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: transparency [-allow FILE | -bridged | -reverse] ROOT")
		return 2
	}
	var rules []Rule
	if *allowFile != "" {
		b, err := os.ReadFile(*allowFile)
		if err == nil {
			rules, err = ParseAllow(string(b))
		}
		if err != nil {
			fmt.Fprintf(stderr, "transparency: %v\n", err)
			return 2
		}
	}
	direct, sidecar := map[Key]Result{}, map[Key]Result{}
	runs, err := load(fs.Arg(0), direct, sidecar)
	if err != nil {
		fmt.Fprintf(stderr, "transparency: %v\n", err)
		return 2
	}
	if runs == 0 {
		fmt.Fprintf(stderr, "transparency: no checks.json under %s\n", fs.Arg(0))
		return 2
	}
	if *bridged || *reverse {
		rows, passed, failed := CompareBridged(direct, sidecar)
		if *reverse {
			rows, passed, failed = CompareEras(direct, sidecar, "modern-", "legacy-")
		}
		printBridged(stdout, rows, passed, failed, *reverse)
		if failed > 0 || passed == 0 {
			return 1
		}
		return 0
	}
	out := Compare(direct, sidecar, rules)
	printOutcome(stdout, out)
	if out.Failed > 0 {
		return 1
	}
	return 0
}

// load reads ROOT/UPSTREAM/CONFIG/SIDE/server-*/checks.json into direct and
// sidecar and returns how many files it read.
func load(root string, direct, sidecar map[Key]Result) (int, error) {
	files, err := filepath.Glob(filepath.Join(root, "*", "*", "*", "server-*", "checks.json"))
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		p := strings.Split(filepath.ToSlash(rel), "/")
		upstream, config, side, dir := p[0], p[1], p[2], p[3]
		scenario, ok := ScenarioOf(dir)
		if !ok {
			return 0, fmt.Errorf("%s: not a conformance result folder", rel)
		}
		var m map[Key]Result
		switch side {
		case "direct":
			m = direct
		case "sidecar":
			m = sidecar
		default:
			return 0, fmt.Errorf("%s: side %q is neither direct nor sidecar", rel, side)
		}
		fh, err := os.Open(f)
		if err != nil {
			return 0, err
		}
		var checks []Check
		err = json.NewDecoder(io.LimitReader(fh, maxChecksFile)).Decode(&checks)
		fh.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", rel, err)
		}
		AddChecks(m, upstream, config, scenario, checks)
	}
	return len(files), nil
}

func printOutcome(w io.Writer, out Outcome) {
	if len(out.Rows) == 0 {
		fmt.Fprintln(w, "no differences")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "upstream\tconfig\tscenario\tcheck\tdirect\tsidecar\tverdict")
		for _, r := range out.Rows {
			verdict := "FAIL"
			if r.Allowed != nil {
				verdict = fmt.Sprintf("allowed (line %d): %s", r.Allowed.Line, r.Allowed.Reason)
			}
			ds, ss := r.Direct.Status, r.Sidecar.Status
			if !r.StatusDiffers {
				ds, ss = ds+" (message)", ss+" (message)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Key.Upstream, r.Key.Config, r.Key.Scenario, r.Key.Check, ds, ss, verdict)
		}
		tw.Flush()
		for _, r := range out.Rows {
			if r.Allowed != nil || r.Direct.Message == r.Sidecar.Message {
				continue
			}
			fmt.Fprintf(w, "\n%s\n  direct:  %s\n  sidecar: %s\n", r.Key, oneLine(r.Direct.Message), oneLine(r.Sidecar.Message))
		}
	}
	for _, u := range out.Unused {
		fmt.Fprintf(w, "note: allow line %d matched nothing (%s)\n", u.Line, u.Reason)
	}
	fmt.Fprintf(w, "transparency: %d passed, %d failed\n", out.Passed, out.Failed)
}

func printBridged(w io.Writer, rows []BridgedRow, passed, failed int, reverse bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head, tally := "legacy wire (passed by)\tmodern wire, bridged", "legacy-vs-bridged"
	if reverse {
		head, tally = "modern wire (passed by)\tlegacy wire, bridged", "modern-vs-bridged"
	}
	fmt.Fprintln(tw, "upstream\tsuite\tscenario\t"+head)
	for _, r := range rows {
		modern := r.Modern
		if len(r.Failed) > 0 {
			modern += ": " + strings.Join(r.Failed, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Upstream, r.Suite, r.Scenario, r.LegacyBy, modern)
	}
	tw.Flush()
	fmt.Fprintf(w, "%s: %d passed, %d failed (scenarios)\n", tally, passed, failed)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
