package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Status is the outcome of one check.
type Status string

// Check statuses, from best to worst.
const (
	StatusOK   Status = "ok"
	StatusSkip Status = "skip" // not applicable or not reached
	StatusWarn Status = "warn" // reported, not a conformance failure
	StatusFail Status = "fail" // the server breaks a MUST
)

func (s Status) rank() int {
	switch s {
	case StatusWarn:
		return 1
	case StatusFail:
		return 2
	}
	return 0
}

// Check is one named check with its status and the reason for it.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Item is the report on one skill (ID is its SKILL.md URI) or one agent (ID
// is its name).
type Item struct {
	ID     string  `json:"id"`
	Status Status  `json:"status"`
	Checks []Check `json:"checks"`
}

// Summary counts the items and checks of a report.
type Summary struct {
	Skills int `json:"skills"`
	Agents int `json:"agents"`
	Fail   int `json:"fail"`
	Warn   int `json:"warn"`
	OK     int `json:"ok"`
}

// Report is everything one verification found. Status is the worst status
// of any check, and fail when the run could not go on (Error: no answer, or
// authorization required), whatever it had checked so far; ExitCode is
// what Run returns for it.
type Report struct {
	URL             string  `json:"url"`
	Era             string  `json:"era,omitempty"`
	ProtocolVersion string  `json:"protocolVersion,omitempty"`
	Status          Status  `json:"status"`
	ExitCode        int     `json:"exitCode"`
	Error           string  `json:"error,omitempty"`
	Server          []Check `json:"server"`
	Skills          []*Item `json:"skills"`
	Agents          []*Item `json:"agents"`
	Summary         Summary `json:"summary"`
}

// checks collects checks in order; a later check of the same name replaces
// an ok one and never downgrades a worse one, so a check run once per file
// ends as its worst outcome with that outcome's reason.
type checks struct{ list []Check }

func (c *checks) add(name string, st Status, format string, args ...any) {
	reason := format
	if len(args) > 0 {
		reason = fmt.Sprintf(format, args...)
	}
	for i := range c.list {
		if c.list[i].Name != name {
			continue
		}
		if st.rank() > c.list[i].Status.rank() || (c.list[i].Status == StatusSkip && st != StatusSkip) {
			c.list[i] = Check{Name: name, Status: st, Reason: reason}
		} else if st == c.list[i].Status && st != StatusOK && reason != "" && !strings.Contains(c.list[i].Reason, reason) {
			c.list[i].Reason = truncate(c.list[i].Reason+"; "+reason, 2000)
		}
		return
	}
	c.list = append(c.list, Check{Name: name, Status: st, Reason: reason})
}

func (c *checks) ok(name, reason string)                { c.add(name, StatusOK, "%s", reason) }
func (c *checks) fail(name, format string, args ...any) { c.add(name, StatusFail, format, args...) }
func (c *checks) warn(name, format string, args ...any) { c.add(name, StatusWarn, format, args...) }
func (c *checks) skip(name, reason string)              { c.add(name, StatusSkip, "%s", reason) }
func (c *checks) status(name string) (Status, bool) {
	for _, ch := range c.list {
		if ch.Name == name {
			return ch.Status, true
		}
	}
	return "", false
}

func worst(cs []Check) Status {
	st := StatusOK
	for _, c := range cs {
		if c.Status.rank() > st.rank() {
			st = c.Status
		}
	}
	return st
}

// finish fills the statuses, summary and exit code.
func (r *Report) finish() {
	r.Status = worst(r.Server)
	all := slices.Clone(r.Server)
	for _, it := range append(slices.Clone(r.Skills), r.Agents...) {
		it.Status = worst(it.Checks)
		if it.Status.rank() > r.Status.rank() {
			r.Status = it.Status
		}
		all = append(all, it.Checks...)
	}
	r.Summary = Summary{Skills: len(r.Skills), Agents: len(r.Agents)}
	for _, c := range all {
		switch c.Status {
		case StatusFail:
			r.Summary.Fail++
		case StatusWarn:
			r.Summary.Warn++
		case StatusOK:
			r.Summary.OK++
		}
	}
	if r.ExitCode == ExitOK && r.Status == StatusFail {
		r.ExitCode = ExitNonconformant
	}
	// A run cut short verified nothing past that point: its verdict is not
	// ok, even with no check failed (the exit code says why).
	if r.Error != "" {
		r.Status = StatusFail
	}
}

// writeJSON writes the report as one indented JSON object.
func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// writeText writes a human summary: every warning and failure with its
// reason, one line per item, and the totals.
func (r *Report) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "verify %s", r.URL)
	if r.Era != "" {
		fmt.Fprintf(&b, " (%s era, protocol %s)", r.Era, r.ProtocolVersion)
	}
	b.WriteString("\n")
	if r.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	}
	server := worst(r.Server)
	if r.Error != "" {
		server = StatusFail // the server was not (all) checked
	}
	writeChecks(&b, "server", server, r.Server)
	for _, it := range r.Skills {
		writeItem(&b, "skill", it)
	}
	for _, it := range r.Agents {
		writeItem(&b, "agent", it)
	}
	fmt.Fprintf(&b, "%s: %d skills, %d agents; %d checks ok, %d warnings, %d failures (exit %d)\n",
		strings.ToUpper(string(r.Status)), r.Summary.Skills, r.Summary.Agents, r.Summary.OK, r.Summary.Warn, r.Summary.Fail, r.ExitCode)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeItem(b *strings.Builder, kind string, it *Item) {
	fmt.Fprintf(b, "%-4s %s %s\n", it.Status, kind, it.ID)
	for _, c := range it.Checks {
		if c.Status == StatusWarn || c.Status == StatusFail {
			fmt.Fprintf(b, "       %-4s %s: %s\n", c.Status, c.Name, c.Reason)
		}
	}
}

func writeChecks(b *strings.Builder, label string, st Status, cs []Check) {
	fmt.Fprintf(b, "%-4s %s\n", st, label)
	for _, c := range cs {
		if c.Status == StatusWarn || c.Status == StatusFail {
			fmt.Fprintf(b, "       %-4s %s: %s\n", c.Status, c.Name, c.Reason)
		}
	}
}
