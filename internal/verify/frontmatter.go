package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Frontmatter errors; every error parseFrontmatter returns wraps one.
var (
	// ErrNoFrontmatter means SKILL.md does not open with a "---" line, or
	// the block is never closed.
	ErrNoFrontmatter = errors.New("verify: no terminated YAML frontmatter")
	// ErrFrontmatterYAML means the frontmatter is not valid UTF-8 YAML.
	ErrFrontmatterYAML = errors.New("verify: frontmatter is not valid YAML")
	// ErrFrontmatterNotJSON means the YAML has no faithful JSON form.
	ErrFrontmatterNotJSON = errors.New("verify: frontmatter has no JSON form")
)

// maxYAMLNodes bounds the work spent on one frontmatter document.
const maxYAMLNodes = 100_000

// parseFrontmatter reads the YAML frontmatter of a served SKILL.md the way
// a strict host does and returns it as a JSON value (maps, slices, strings,
// bools, nil and json.Number). The block lies between a first line "---"
// and the next "---" line (a UTF-8 BOM and trailing blanks on the
// delimiters tolerated; LF, CRLF or CR line ends). Values with no faithful
// JSON form are refused (SEP-2640: aliases, merge keys, explicit tags,
// non-string or duplicate keys, NaN and infinities); a timestamp stays the
// string the author wrote.
func parseFrontmatter(b []byte) (v any, err error) {
	b = bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF"))
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	b = bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
	lines := strings.Split(string(b), "\n")
	delim := func(s string) bool { return strings.TrimRight(s, " \t") == "---" }
	if len(lines) == 0 || !delim(lines[0]) {
		return nil, ErrNoFrontmatter
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if delim(lines[i]) {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, ErrNoFrontmatter
	}
	// Each line keeps its line break, the last one included: a block
	// scalar at the end of the frontmatter ends in "\n" (YAML clip chomping).
	var text string
	if end > 1 {
		text = strings.Join(lines[1:end], "\n") + "\n"
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%w: not UTF-8", ErrFrontmatterYAML)
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%w: parser failure: %v", ErrFrontmatterYAML, r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFrontmatterYAML, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	budget := maxYAMLNodes
	return toJSON(doc.Content[0], &budget)
}

func toJSON(n *yaml.Node, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("%w: more than %d YAML nodes", ErrFrontmatterNotJSON, maxYAMLNodes)
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrFrontmatterNotJSON, n.Line, fmt.Sprintf(format, args...))
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return nil, refuse("anchors and aliases are not allowed")
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return nil, refuse("explicit tag %s is not allowed", n.Tag)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				if k.ShortTag() == "!!merge" {
					return nil, refuse("merge key << is not allowed")
				}
				return nil, refuse("key %q is not a string", k.Value)
			}
			if _, dup := m[k.Value]; dup {
				return nil, refuse("duplicate key %q", k.Value)
			}
			val, err := toJSON(n.Content[i+1], budget)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			val, err := toJSON(item, budget)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		return scalar(n, refuse)
	}
	return nil, refuse("unexpected YAML node")
}

func scalar(n *yaml.Node, refuse func(string, ...any) error) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, refuse("bad boolean %q", n.Value)
		}
		return b, nil
	case "!!int":
		var i big.Int
		// YAML 1.2 core schema: decimal unless 0x or 0o says otherwise, so
		// 010 is ten (yaml.v3 also accepts 0b and _ separators).
		s := strings.ReplaceAll(n.Value, "_", "")
		base := 10
		if digits := strings.TrimLeft(s, "+-"); len(digits) > 1 && digits[0] == '0' && strings.ContainsAny(digits[1:2], "xXoObB") {
			base = 0
		}
		if _, ok := i.SetString(s, base); !ok {
			return nil, refuse("bad integer %q", n.Value)
		}
		return json.Number(i.String()), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, refuse("bad number %q", n.Value)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, refuse("%s has no JSON form", n.Value)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return nil, refuse("%s value has no JSON form", n.ShortTag())
}

// decodeJSON decodes b into the same value space as parseFrontmatter.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// diffJSON compares two JSON values field by field and returns the first
// difference as a path and a description, or "" when they are equal.
// Numbers compare by value, so 1, 1.0 and 1e0 are equal.
func diffJSON(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %s, want an object", orRoot(path), kind(got))
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: missing", join(path, k))
			}
			if d := diffJSON(join(path, k), w[k], gv); d != "" {
				return d
			}
		}
		for _, k := range slices.Sorted(maps.Keys(g)) {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s: unexpected field", join(path, k))
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: %s, want an array", orRoot(path), kind(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: %d items, want %d", orRoot(path), len(g), len(w))
		}
		for i := range w {
			if d := diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !numEqual(w, g) {
			return fmt.Sprintf("%s: %s, want %s", orRoot(path), show(got), w)
		}
		return ""
	default:
		if want != got {
			return fmt.Sprintf("%s: %s, want %s", orRoot(path), show(got), show(want))
		}
		return ""
	}
}

func numEqual(a, b json.Number) bool {
	x, _, err1 := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, err2 := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	return err1 == nil && err2 == nil && x.Cmp(y) == 0
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func show(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		return kind(v)
	}
	b, _ := json.Marshal(v)
	return truncate(string(b), 80)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
