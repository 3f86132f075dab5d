package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of the Agent Skills specification and SEP-2640.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
	// ReservedMetadataPrefix starts metadata keys reserved for MCP itself.
	ReservedMetadataPrefix = "io.modelcontextprotocol/"
)

// issue is one rule failure: its Problem kind and reason.
type issue struct{ kind, reason string }

// skillMeta is what the rules extract from a valid SKILL.md frontmatter.
type skillMeta struct {
	name, description string
	warnings          []issue
}

// checkSkill applies the skill rules to a SKILL.md frontmatter (already
// JSON). skillPath is the skill's path under skills/; its final segment must
// equal the name. The first failure is returned; warnings do not fail.
func checkSkill(fm json.RawMessage, skillPath string) (skillMeta, *issue) {
	var m skillMeta
	fields, bad := objectFields(fm)
	if bad != nil {
		return m, bad
	}
	name, bad := stringField(fields, "name", KindName)
	if bad != nil {
		return m, bad
	}
	if !ValidSkillName(name) {
		return m, &issue{KindName, fmt.Sprintf("name %q is not 1-64 lowercase letters, digits and single hyphens (^[a-z0-9]+(-[a-z0-9]+)*$)", truncate(name, 80))}
	}
	if last := path.Base(skillPath); name != last {
		return m, &issue{KindName, fmt.Sprintf("name %q does not equal the skill folder name %q", name, last)}
	}
	desc, bad := stringField(fields, "description", KindDescription)
	if bad != nil {
		return m, bad
	}
	if strings.TrimSpace(desc) == "" {
		return m, &issue{KindDescription, "description is empty"}
	}
	if n := utf8.RuneCountInString(desc); n > MaxDescriptionLen {
		return m, &issue{KindDescription, fmt.Sprintf("description is %d characters; at most %d are allowed", n, MaxDescriptionLen)}
	}
	if _, ok := fields["compatibility"]; ok {
		c, bad := stringField(fields, "compatibility", KindCompatibility)
		if bad != nil {
			return m, bad
		}
		if n := utf8.RuneCountInString(c); n > MaxCompatibilityLen {
			return m, &issue{KindCompatibility, fmt.Sprintf("compatibility is %d characters; at most %d are allowed", n, MaxCompatibilityLen)}
		}
	}
	warnings, bad := checkMetadata(fields)
	if bad != nil {
		return m, bad
	}
	return skillMeta{name: name, description: desc, warnings: warnings}, nil
}

// objectFields decodes a frontmatter that must be a JSON object.
func objectFields(fm json.RawMessage) (map[string]json.RawMessage, *issue) {
	if t := bytes.TrimSpace(fm); len(t) == 0 || t[0] != '{' {
		return nil, &issue{KindFrontmatter, "frontmatter is not a mapping"}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(fm, &fields); err != nil {
		return nil, &issue{KindFrontmatter, fmt.Sprintf("frontmatter is not a JSON object: %v", err)}
	}
	return fields, nil
}

// stringField returns a required string field.
func stringField(fields map[string]json.RawMessage, key, kind string) (string, *issue) {
	raw, ok := fields[key]
	if !ok {
		return "", &issue{kind, fmt.Sprintf("frontmatter has no %s", key)}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &issue{kind, fmt.Sprintf("%s is %s, not a string", key, jsonKind(raw))}
	}
	return s, nil
}

// checkMetadata requires metadata, when present, to map strings to strings,
// and warns about keys reserved for MCP.
func checkMetadata(fields map[string]json.RawMessage) ([]issue, *issue) {
	raw, ok := fields["metadata"]
	if !ok {
		return nil, nil
	}
	var md map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(raw, &md) != nil {
		return nil, &issue{KindMetadata, fmt.Sprintf("metadata is %s, not a map of strings", jsonKind(raw))}
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var warnings []issue
	for _, k := range keys {
		var s string
		if json.Unmarshal(md[k], &s) != nil {
			return nil, &issue{KindMetadata, fmt.Sprintf("metadata key %q is %s, not a string", k, jsonKind(md[k]))}
		}
		if strings.HasPrefix(k, ReservedMetadataPrefix) {
			warnings = append(warnings, issue{KindMetadata, fmt.Sprintf("metadata key %q uses the prefix %q reserved for MCP", k, ReservedMetadataPrefix)})
		}
	}
	return warnings, nil
}

// jsonKind names the JSON type of raw for a reason sentence.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '{':
		return "a mapping"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// ValidSkillName reports whether name follows the Agent Skills name rule:
// 1-64 characters matching ^[a-z0-9]+(-[a-z0-9]+)*$.
func ValidSkillName(name string) bool {
	if name == "" || len(name) > MaxNameLen || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && name[i-1] != '-':
		default:
			return false
		}
	}
	return true
}
