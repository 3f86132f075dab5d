package main

import (
	"bufio"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Key names one check of one run: the upstream kind, the suite
// configuration (suite and spec version), the scenario and the check id. A
// check id a scenario reports more than once is numbered from its second
// occurrence ("wire-schema-valid#2"), in file order.
type Key struct {
	Upstream, Config, Scenario, Check string
}

func (k Key) String() string {
	return k.Upstream + " " + k.Config + " " + k.Scenario + " " + k.Check
}

// Result is what one side reported for one check: its status (SUCCESS,
// FAILURE, WARNING, SKIPPED) and its message (errorMessage), as written.
type Result struct {
	Status, Message string
}

// Absent is the status of a check one side did not report at all.
const Absent = "(absent)"

// Rule is one line of the allow file: a difference is allowed when every
// field matches (path.Match globs) and the two statuses match.
type Rule struct {
	Upstream, Config, Scenario, Check string
	Direct, Sidecar                   string // statuses, or "*"
	Reason                            string
	Line                              int
}

func (r Rule) matches(k Key, direct, sidecar string) bool {
	m := func(pat, s string) bool { ok, _ := path.Match(pat, s); return ok }
	return m(r.Upstream, k.Upstream) && m(r.Config, k.Config) && m(r.Scenario, k.Scenario) &&
		m(r.Check, k.Check) && m(r.Direct, direct) && m(r.Sidecar, sidecar)
}

// ParseAllow reads an allow file: one rule a line,
//
//	UPSTREAM CONFIG SCENARIO CHECK DIRECT SIDECAR REASON...
//
// each of the first six a glob ("*" for any), the reason the rest of the
// line and required. Blank lines and lines starting with # are comments.
func ParseAllow(text string) ([]Rule, error) {
	var rules []Rule
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 7 {
			return nil, fmt.Errorf("allow line %d: want UPSTREAM CONFIG SCENARIO CHECK DIRECT SIDECAR REASON, got %d fields", n, len(f))
		}
		for _, p := range f[:6] {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("allow line %d: bad pattern %q: %w", n, p, err)
			}
		}
		rules = append(rules, Rule{Upstream: f[0], Config: f[1], Scenario: f[2], Check: f[3], Direct: f[4], Sidecar: f[5],
			Reason: strings.Join(f[6:], " "), Line: n})
	}
	return rules, sc.Err()
}

var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	// Timestamps first: their digits would otherwise look like ports.
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}[:-]\d{2}[:-]\d{2}(?:[.-]\d+)?(?:Z|[+-]\d{2}:?\d{2})?`), "<time>"},
	{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	{regexp.MustCompile(`(?i)(?:https?://)?(?:\b127(?:\.\d{1,3}){3}|\blocalhost|\[::1\])(?::\d+)?`), "<host>"},
	{regexp.MustCompile(`(?i)\bport \d+`), "port <port>"},
}

// Normalize masks what differs between two runs of the same server without
// meaning anything: loopback hosts and their ports, UUIDs and timestamps.
//
// The masks are applied until nothing changes, so that masking is
// idempotent: a mask's "<...>" can put a word boundary where there was none
// ("localhost0f8fad5b-..." masks the host, and then the UUID). That ends:
// no mask matches inside another's replacement, so each pass that changes
// anything uses up bytes of the message.
func Normalize(msg string) string {
	for {
		before := msg
		for _, m := range masks {
			msg = m.re.ReplaceAllString(msg, m.with)
		}
		if msg == before {
			return msg
		}
	}
}

// Row is one difference between the two sides.
type Row struct {
	Key             Key
	Direct, Sidecar Result
	// StatusDiffers is false when only the (normalised) messages differ.
	StatusDiffers bool
	// Allowed is the rule that covers the difference; nil means it fails.
	Allowed *Rule
}

// Outcome is the comparison of every check of every run.
type Outcome struct {
	Rows           []Row // the differences, sorted by key
	Passed, Failed int   // checks: the same on both sides or allowed; not allowed
	Unused         []Rule
}

// Compare compares every check either side reported.
func Compare(direct, sidecar map[Key]Result, rules []Rule) Outcome {
	keys := map[Key]bool{}
	for k := range direct {
		keys[k] = true
	}
	for k := range sidecar {
		keys[k] = true
	}
	sorted := make([]Key, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].String() < sorted[j].String() })
	used := make([]bool, len(rules))
	var out Outcome
	for _, k := range sorted {
		d, dok := direct[k]
		s, sok := sidecar[k]
		if !dok {
			d.Status = Absent
		}
		if !sok {
			s.Status = Absent
		}
		statusDiffers := d.Status != s.Status
		if !statusDiffers && Normalize(d.Message) == Normalize(s.Message) {
			out.Passed++
			continue
		}
		row := Row{Key: k, Direct: d, Sidecar: s, StatusDiffers: statusDiffers}
		for i := range rules {
			if rules[i].matches(k, d.Status, s.Status) {
				row.Allowed = &rules[i]
				used[i] = true
				break
			}
		}
		if row.Allowed != nil {
			out.Passed++
		} else {
			out.Failed++
		}
		out.Rows = append(out.Rows, row)
	}
	for i, u := range used {
		if !u {
			out.Unused = append(out.Unused, rules[i])
		}
	}
	return out
}

// scenarioDir matches the folder the conformance CLI writes per scenario:
// server-SCENARIO-<ISO timestamp with dashes>.
var scenarioDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// ScenarioOf returns the scenario a result folder's name belongs to.
func ScenarioOf(dir string) (string, bool) {
	m := scenarioDir.FindStringSubmatch(dir)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Check is one element of a checks.json array (the fields compared).
type Check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// AddChecks adds one scenario's checks to m under upstream, config and
// scenario, numbering repeated ids.
func AddChecks(m map[Key]Result, upstream, config, scenario string, checks []Check) {
	seen := map[string]int{}
	for _, c := range checks {
		seen[c.ID]++
		id := c.ID
		if n := seen[c.ID]; n > 1 {
			id = fmt.Sprintf("%s#%d", c.ID, n)
		}
		m[Key{upstream, config, scenario, id}] = Result{Status: c.Status, Message: c.ErrorMessage}
	}
}
