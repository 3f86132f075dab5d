package catalog

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Portability modes of Options.FrontmatterPortability: what happens to a
// skill whose SKILL.md frontmatter has an [Ambiguity].
const (
	PortabilitySkip = "skip" // the skill is skipped (default)
	PortabilityWarn = "warn" // the skill is served, with a warning
)

// Ambiguity is a plain scalar in a frontmatter that a YAML 1.1 reader
// (PyYAML's safe_load, with which Python hosts verify an install) reads as a
// different JSON value than the YAML 1.2 core schema the sidecar publishes:
// `yes` (the boolean true, or the string "yes"), `0755`, `1:30`, `1_000`,
// `1e3`, a timestamp with a time; as a mapping key, anything 1.1 does not
// read as a string (`on`, `2025-06-02`). Such a host refuses the skill, since
// its reading and the listed frontmatter differ. Quoting the scalar gives
// both readers the same string.
type Ambiguity struct {
	// Line counts from the opening delimiter, as in a frontmatter refusal.
	Line int
	// Path names where the scalar is: "enabled", "metadata.version",
	// "tags[2]".
	Path string
	// Key is true when the scalar is the mapping key at Path.
	Key bool
	// Text is the scalar as written.
	Text string
	// YAML11 and YAML12 say what each reader makes of it ("the boolean
	// true", "the string \"yes\"").
	YAML11, YAML12 string
	// Fix shows the quoted spelling both read alike, e.g. `enabled: "yes"`;
	// a key too long to be implicit once quoted is shown as an explicit
	// key ("? ...").
	Fix string
}

// String is the one-line reason a Problem carries.
func (a Ambiguity) String() string {
	where := a.Path + ": " + a.Text
	switch {
	case a.Key:
		where = "key " + a.Path
	case a.Path == "":
		where = a.Text
	}
	return fmt.Sprintf("line %d: %s is %s in YAML 1.2 but %s in YAML 1.1 (PyYAML); quote it: %s",
		a.Line, where, a.YAML12, a.YAML11, a.Fix)
}

// yaml11Differs compares the YAML 1.1 reading of the plain scalar s with its
// core-schema reading core (a tag of coreTag, the scalar already accepted
// by the converter). It returns what 1.1 makes of s when the two give
// different JSON, "" when they agree. A key is a string in the core schema
// here (the converter refuses other keys), so any other 1.1 reading of a
// key differs, a date included.
func yaml11Differs(s, core string, key bool) string {
	if key {
		r, num := key11(s)
		if r == read11Str {
			return ""
		}
		return describe11(r, s, num)
	}
	r, num := read11(s)
	switch r {
	case read11Str, read11Date: // a date turns back into the same text
		if core == tagStr {
			return ""
		}
	case read11Null, read11Bool: // the spellings both schemas share read alike
		if core == tagNull && r == read11Null || core == tagBool && r == read11Bool {
			return ""
		}
	case read11Int, read11Float:
		if c := coreNumber(s, core); c != nil && num != nil && c.Cmp(num) == 0 {
			return ""
		}
	}
	return describe11(r, s, num)
}

// coreNumber is the exact value of a core-schema integer or float, nil for
// any other tag.
func coreNumber(s, core string) *big.Rat {
	switch core {
	case tagInt:
		if i, ok := parseCoreInt(s); ok {
			return new(big.Rat).SetInt(i)
		}
	case tagFloat:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return new(big.Rat).SetFloat64(f)
		}
	}
	return nil
}

// describe11 names a 1.1 reading for a reason sentence.
func describe11(r reading11, s string, num *big.Rat) string {
	switch r {
	case read11Null:
		return "null"
	case read11Bool:
		return fmt.Sprintf("the boolean %t", bool11(s))
	case read11Int:
		return "the integer " + num.RatString()
	case read11Float:
		if num == nil {
			return "a float JSON cannot carry"
		}
		f, _ := num.Float64()
		return "the float " + strconv.FormatFloat(f, 'g', -1, 64)
	case read11Date:
		return "a date"
	case read11Timestamp:
		return "a timestamp (a datetime, not a string)"
	case read11Error:
		return "an error, refusing the whole document"
	}
	return describe12(s, tagStr)
}

// describe12 names a core-schema reading for a reason sentence.
func describe12(s, core string) string {
	switch core {
	case tagStr:
		var b bytes.Buffer
		writeJSONString(&b, s)
		return "the string " + b.String()
	case tagNull:
		return "null"
	case tagBool:
		return "the boolean " + strings.ToLower(s)
	case tagInt, tagFloat:
		f, _ := coreNumber(s, core).Float64()
		if core == tagInt {
			return "the integer " + coreNumber(s, core).RatString()
		}
		return "the float " + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return "the " + core + " " + s
}

// maxReasonAmbiguities bounds the ambiguities one Problem's reason lists.
const maxReasonAmbiguities = 3

// AmbiguityReason is the Problem reason for a SKILL.md with ambiguities amb
// (at least one): the first few, each with its fix, and a count of the rest.
// The overlay (package methods) gives the same reason for a SKILL.md the
// upstream serves.
func AmbiguityReason(amb []Ambiguity) string {
	var b strings.Builder
	b.WriteString("frontmatter that YAML 1.1 hosts read differently: ")
	for i, a := range amb[:min(len(amb), maxReasonAmbiguities)] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(a.String())
	}
	if n := len(amb) - maxReasonAmbiguities; n > 0 {
		fmt.Fprintf(&b, "; and %d more", n)
	}
	return b.String()
}
