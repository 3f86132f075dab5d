package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Model routing roles (agents extension modelRoutingHint.role).
const (
	RoleSmall  = "small"
	RoleMedium = "medium"
	RoleLarge  = "large"
)

// Agent is one agents/*.md file that passed the rules. Nothing in it may be
// mutated once published.
type Agent struct {
	// Name is the frontmatter name, unique in the snapshot.
	Name string
	// Description is the frontmatter description collapsed to single spaces.
	Description string
	// Capabilities are the string items of the frontmatter capabilities list;
	// never nil, other items are dropped.
	Capabilities []string
	// Instructions is the body with CRLF turned into "\n" and trimmed.
	Instructions string
	// HasInstructions is false when the body is blank; agents/get then omits
	// instructions.
	HasInstructions bool
	// Model is the frontmatter model when it is a string, as written.
	Model string
	// ModelRole is the routing hint derived from Model: RoleSmall, RoleMedium,
	// RoleLarge, or "" for none (inherit, unknown or absent).
	ModelRole string
	// Tools are the tool names, from a list or a comma-separated string;
	// never nil.
	Tools []string
	// Skills are the skills the agent names that the snapshot serves, in the
	// order written; never nil.
	Skills []AgentSkill
	// Frontmatter is every field the author wrote, as a JSON object.
	Frontmatter json.RawMessage
	// File is the agent's file relative to the plugin root, e.g. "agents/triage.md".
	File string
}

// AgentSkill is a skill an agent refers to, resolved to a served skill.
type AgentSkill struct {
	// Name is the reference as the agent wrote it.
	Name string
	// URI is the SKILL.md URI of the served skill.
	URI string
}

// skillIndex resolves the skill references of agents: by skill name (the
// final path segment) or by full skill path.
type skillIndex struct {
	byName map[string][]*Skill
	byPath map[string]*Skill
}

func newSkillIndex(skills []*Skill) skillIndex {
	ix := skillIndex{byName: map[string][]*Skill{}, byPath: map[string]*Skill{}}
	for _, s := range skills {
		ix.byName[s.Name] = append(ix.byName[s.Name], s)
		ix.byPath[s.Path] = s
	}
	return ix
}

// parseAgent applies the agent rules to one file's bytes. It returns the
// agent and any warnings, or the reason it is skipped.
func parseAgent(file string, data []byte, ix skillIndex) (*Agent, []issue, *issue) {
	if !utf8.Valid(data) {
		return nil, nil, &issue{KindEncoding, "file is not valid UTF-8"}
	}
	fm, body, err := ParseFrontmatter(data)
	if err != nil {
		return nil, nil, frontmatterIssue(err)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(fm, &fields) != nil || len(fields) == 0 || fm[0] != '{' {
		return nil, nil, &issue{KindFrontmatter, "frontmatter is not a non-empty mapping"}
	}
	a := &Agent{Frontmatter: fm, File: file}
	var bad *issue
	if a.Name, bad = stringField(fields, "name", KindName); bad != nil {
		return nil, nil, bad
	}
	if bad := agentNameProblem(a.Name); bad != "" {
		return nil, nil, &issue{KindName, fmt.Sprintf("name %q %s", truncate(a.Name, 80), bad)}
	}
	desc, bad := stringField(fields, "description", KindDescription)
	if bad != nil {
		return nil, nil, bad
	}
	if a.Description = strings.Join(strings.Fields(desc), " "); a.Description == "" {
		return nil, nil, &issue{KindDescription, "description is empty"}
	}
	a.Instructions = strings.TrimSpace(strings.ReplaceAll(string(body), "\r\n", "\n"))
	a.HasInstructions = a.Instructions != ""
	_ = json.Unmarshal(fields["model"], &a.Model) // a non-string model gives no hint
	a.ModelRole = modelRole(a.Model)
	a.Capabilities = stringItems(fields["capabilities"])
	a.Tools = toolList(fields["tools"])
	var warnings []issue
	a.Skills, warnings = ix.resolve(fields["skills"])
	return a, warnings, nil
}

// FrontmatterReason is the Problem reason for a file whose frontmatter
// ParseFrontmatterAmbiguities refused with err. The overlay (package
// upstreamfiles) gives the same reason for a SKILL.md the upstream serves.
func FrontmatterReason(err error) string { return frontmatterIssue(err).reason }

// frontmatterIssue turns a ParseFrontmatter error into a skip reason.
func frontmatterIssue(err error) *issue {
	switch {
	case errors.Is(err, ErrNoFrontmatter):
		return &issue{KindFrontmatter, "file has no YAML frontmatter (a first line \"---\")"}
	case errors.Is(err, ErrUnterminatedFrontmatter):
		return &issue{KindFrontmatter, "YAML frontmatter is not closed by a \"---\" line"}
	case errors.Is(err, ErrFrontmatterEncoding):
		return &issue{KindEncoding, "frontmatter is not valid UTF-8"}
	}
	return &issue{KindFrontmatter, strings.TrimPrefix(err.Error(), "catalog: ")}
}

// agentNameProblem says what is wrong with an agent name, or "" when nothing
// is. Names are shown to people and used as keys, so nothing in them may be
// invisible or ambiguous.
func agentNameProblem(name string) string {
	if name == "" {
		return "is empty"
	}
	for _, r := range name {
		switch {
		case r == '/' || r == '@':
			return fmt.Sprintf("contains %q", r)
		case unicode.IsSpace(r):
			return fmt.Sprintf("contains whitespace %U", r)
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) || !isAssignedRune(r):
			return fmt.Sprintf("contains a control, invisible or unassigned character %U", r)
		}
	}
	return ""
}

// isAssignedRune reports whether r is an assigned code point (not Cn).
func isAssignedRune(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z,
		unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// modelRole maps a Claude Code model value to a routing role: the family
// names opus, sonnet and haiku, alone or as words inside a model id such as
// "claude-sonnet-4-5", in any case. "inherit" and anything else give none.
func modelRole(model string) string {
	words := strings.FieldsFunc(strings.ToLower(model), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		switch w {
		case "opus":
			return RoleLarge
		case "sonnet":
			return RoleMedium
		case "haiku":
			return RoleSmall
		}
	}
	return ""
}

// stringItems returns the string items of a JSON list, dropping the rest;
// anything but a list gives an empty slice.
func stringItems(raw json.RawMessage) []string {
	var items []json.RawMessage
	out := []string{}
	if json.Unmarshal(raw, &items) != nil {
		return out
	}
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// toolList reads tools as a list of names or one comma-separated string
// (both forms appear in Claude Code plugins), trimming and dropping blanks.
func toolList(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		out := []string{}
		for t := range strings.SplitSeq(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
		return out
	}
	out := []string{}
	for _, t := range stringItems(raw) {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// resolve maps the names of an agent's skills list to served skills. A
// bare string, a map or non-string items give nothing; a name that matches
// no served skill, or several, is warned about.
func (ix skillIndex) resolve(raw json.RawMessage) ([]AgentSkill, []issue) {
	out := []AgentSkill{}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return out, nil
	}
	var warnings []issue
	for _, it := range items {
		var name string
		if json.Unmarshal(it, &name) != nil {
			continue
		}
		var matches []*Skill
		if s, ok := ix.byPath[name]; ok {
			matches = []*Skill{s}
		} else {
			matches = ix.byName[name]
		}
		switch len(matches) {
		case 0:
			warnings = append(warnings, issue{KindReference, fmt.Sprintf("skill %q is not served by this plugin", truncate(name, 80))})
			continue
		case 1:
		default:
			warnings = append(warnings, issue{KindReference, fmt.Sprintf("skill %q names %d skills; all are listed (use a skill path such as %q to pick one)", name, len(matches), matches[0].Path)})
		}
		for _, s := range matches {
			out = append(out, AgentSkill{Name: name, URI: s.URI})
		}
	}
	return out, warnings
}
