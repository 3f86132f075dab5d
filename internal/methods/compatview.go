package methods

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// Host compatibility (Options.HostCompat): for hosts that speak MCP tools
// and prompts but not the Skills extension, the same catalog is offered as
// one prompt per skill and two tools, appended to the upstream's own
// prompts/list and tools/list. This file holds their names and encoded
// entries, built once per snapshot; hostcompat.go answers with them.

// Defaults and limits of host compatibility.
const (
	// DefaultHostCompatPrefix starts every prompt and tool name when
	// HostCompat.Prefix is empty.
	DefaultHostCompatPrefix = "skill_"
	// MaxCompatNameLen is the longest name a prompt or tool may have (the
	// MCP tool-name rules: 1 to 128 characters); a skill whose derived
	// name is longer gets no prompt (its files stay reachable by the
	// tools).
	MaxCompatNameLen = 128
	// MaxLoadDescription bounds the loading tool's description, in bytes:
	// a line per skill (its path and description) until the next would
	// pass it, then a line saying how many were left out.
	MaxLoadDescription = 4096
	// maxListedDescription bounds one skill's description within that list,
	// in bytes, cut at a rune boundary with "…".
	maxListedDescription = 200
)

// compatView is host compatibility's share of a view: immutable, built
// with it.
type compatView struct {
	// promptNames are the prompt names in name order; promptEntries[i]
	// is the encoded prompts/list entry of promptNames[i] and prompts[i]
	// what it offers.
	promptNames   []string
	promptEntries []json.RawMessage
	prompts       []compatPrompt
	promptIndex   map[string]int // promptNames[i] → i
	// loadName and readName are the tools' names; toolEntries are their
	// encoded tools/list entries, in that order.
	loadName, readName string
	toolEntries        []json.RawMessage
	// byArg finds a skill by the loading tool's argument: its path, or its
	// frontmatter name when no other skill has that name.
	byArg map[string]*catalog.Skill
}

// compatName derives a name from a skill path: the prefix, then the path
// with "/" written "__" and every character outside [A-Za-z0-9_-] written
// "_", the characters tool names may hold wherever hosts send them. "" when
// the result would pass MaxCompatNameLen.
func compatName(prefix, path string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range path {
		switch {
		case r == '/':
			b.WriteString("__")
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() > MaxCompatNameLen {
		return ""
	}
	return b.String()
}

type promptEntry struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

type toolEntry struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

// The tools' schemas (JSON Schema 2020-12, the MCP default dialect).
const (
	loadInputSchema = `{"type":"object","properties":{"skill":{"type":"string","description":"The skill's path as listed (or its name when no other skill has it)."}},"required":["skill"]}`
	fileSchema      = `{"type":"object","properties":{"uri":{"type":"string"},"mimeType":{"type":"string"},"size":{"type":"integer"}},"required":["uri"]}`
	loadOutSchema   = `{"type":"object","properties":{"uri":{"type":"string"},"path":{"type":"string"},"name":{"type":"string"},"description":{"type":"string"},"text":{"type":"string"},"files":{"type":"array","items":` + fileSchema + `}},"required":["uri","path","text","files"]}`
	readInputSchema = `{"type":"object","properties":{"uri":{"type":"string","description":"A skill file's skill:// URI, as the loading tool lists them."}},"required":["uri"]}`
	readOutSchema   = `{"type":"object","properties":{"uri":{"type":"string"},"mimeType":{"type":"string"},"text":{"type":"string"},"blob":{"type":"string","description":"base64, for a file that is not text"}},"required":["uri"]}`
	toolAnnotations = `{"readOnlyHint":true,"idempotentHint":true,"openWorldHint":false}`
)

func newCompatView(snap *catalog.Snapshot, hc HostCompat) *compatView {
	prefix := hc.prefix()
	c := &compatView{loadName: prefix + "load", readName: prefix + "read", byArg: map[string]*catalog.Skill{}}
	if snap == nil {
		return c
	}
	skills := snap.Skills()
	names := map[string]int{}
	for _, sk := range skills {
		c.byArg[sk.Path] = sk
		names[sk.Name]++
	}
	for _, sk := range skills {
		if _, isPath := c.byArg[sk.Name]; names[sk.Name] == 1 && !isPath {
			c.byArg[sk.Name] = sk
		}
	}
	if hc.Prompts {
		c.addPrompts(snap, prefix)
	}
	if hc.Tools {
		c.toolEntries = []json.RawMessage{
			mustJSON(toolEntry{Name: c.loadName, Description: loadDescription(skills, c.readName), InputSchema: json.RawMessage(loadInputSchema),
				OutputSchema: json.RawMessage(loadOutSchema), Annotations: json.RawMessage(toolAnnotations)}),
			mustJSON(toolEntry{Name: c.readName, Description: "Reads one file of a skill (a skill:// URI that " + c.loadName + " lists) and returns its text, or base64 for a file that is not text.",
				InputSchema: json.RawMessage(readInputSchema), OutputSchema: json.RawMessage(readOutSchema), Annotations: json.RawMessage(toolAnnotations)}),
		}
	}
	return c
}

// compatPrompt is what one prompt offers: a skill, or an agent.
type compatPrompt struct {
	skill *catalog.Skill
	agent *catalog.Agent
}

// agentInfix follows the prefix in an agent's prompt name.
const agentInfix = "agent__"

// addPrompts names a prompt for each skill (the prefix and its path) and
// for each agent with instructions (the prefix, "agent__" and its name),
// skills first: of two that derive one name (two paths, or a skill path
// "agent/NAME" and an agent NAME) the first keeps it. The entries carry
// the frontmatter name as title and the description.
func (c *compatView) addPrompts(snap *catalog.Snapshot, prefix string) {
	type p struct {
		name  string
		entry promptEntry
		what  compatPrompt
	}
	var ps []p
	seen := map[string]bool{}
	add := func(name string, e promptEntry, what compatPrompt) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		e.Name = name
		ps = append(ps, p{name, e, what})
	}
	for _, sk := range snap.Skills() { // URI order
		add(compatName(prefix, sk.Path), promptEntry{Title: sk.Name, Description: sk.Description}, compatPrompt{skill: sk})
	}
	for _, a := range snap.Agents() {
		if a.HasInstructions {
			add(compatName(prefix+agentInfix, a.Name), promptEntry{Title: a.Name, Description: a.Description}, compatPrompt{agent: a})
		}
	}
	slices.SortFunc(ps, func(x, y p) int { return strings.Compare(x.name, y.name) })
	c.promptIndex = make(map[string]int, len(ps))
	for i, x := range ps {
		c.promptIndex[x.name] = i
		c.promptNames = append(c.promptNames, x.name)
		c.prompts = append(c.prompts, x.what)
		c.promptEntries = append(c.promptEntries, mustJSON(x.entry))
	}
}

// loadDescription is the loading tool's description: what it does, then
// the served skills, one line each ("path: description"), within
// MaxLoadDescription bytes; the skills that do not fit are counted on a
// last line, so a model knows the list is not whole (progressive
// disclosure: the full text comes only with a load).
func loadDescription(skills []*catalog.Skill, readName string) string {
	var b strings.Builder
	b.WriteString("Loads a skill: returns its SKILL.md instructions and the list of its files (read them with " + readName + "). Call it when a task matches a skill below. Skills (path: description):")
	for i, sk := range skills {
		line := "\n- " + sk.Path + ": " + cut(sk.Description, maxListedDescription)
		room := 0 // kept for the marker while skills follow this one
		if i < len(skills)-1 {
			room = len(leftOut(len(skills)))
		}
		if b.Len()+len(line)+room > MaxLoadDescription {
			b.WriteString(leftOut(len(skills) - i))
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// leftOut is the loading tool's marker of n skills its description leaves
// out.
func leftOut(n int) string {
	return "\n… and " + strconv.Itoa(n) + " more skills not listed here: load one by its path."
}

// cut shortens s to at most n bytes at a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// ownName returns the name of the sidecar's tool (tools/call) or prompt
// (prompts/get) that raw, the request's params.name, names; ok is false
// when it names none. It allocates nothing unless raw holds escapes: every
// forwarded tools/call passes here.
func (c *compatView) ownName(method string, raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	b := raw[1 : len(raw)-1]
	if bytes.IndexByte(b, '\\') >= 0 {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		b = []byte(s)
	}
	switch method {
	case "tools/call":
		switch string(b) {
		case c.loadName:
			return c.loadName, true
		case c.readName:
			return c.readName, true
		}
	case "prompts/get":
		if i, ok := c.promptIndex[string(b)]; ok {
			return c.promptNames[i], true
		}
	}
	return "", false
}
