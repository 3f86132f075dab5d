package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Frontmatter errors. Every error [ParseFrontmatter] returns wraps exactly one
// of them; compare with errors.Is.
var (
	// ErrNoFrontmatter means the first line is not a "---" delimiter.
	ErrNoFrontmatter = errors.New("catalog: no YAML frontmatter")
	// ErrUnterminatedFrontmatter means no closing "---" line follows the opening one.
	ErrUnterminatedFrontmatter = errors.New("catalog: unterminated YAML frontmatter")
	// ErrFrontmatterEncoding means the frontmatter is not valid UTF-8.
	ErrFrontmatterEncoding = errors.New("catalog: frontmatter is not valid UTF-8")
	// ErrFrontmatterSyntax means the frontmatter is not valid YAML.
	ErrFrontmatterSyntax = errors.New("catalog: frontmatter is not valid YAML")
	// ErrFrontmatterNotJSON means the frontmatter is valid YAML that has no
	// faithful JSON form (aliases, merge keys, explicit tags, non-string or
	// duplicate keys, NaN or infinities).
	ErrFrontmatterNotJSON = errors.New("catalog: frontmatter is not representable as JSON")
)

// utf8BOM is skipped before the opening delimiter; the served bytes keep it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ParseFrontmatter splits b into its YAML frontmatter and body and converts
// the frontmatter to JSON, as a strict client would read it from the same
// bytes with a YAML 1.2 (core schema) parser: mapping key order is kept,
// plain scalars are typed by the core schema (so `yes`, `on`, `010` and
// `2024-01-15` mean what YAML 1.2 says: a string, a string, the integer 10
// and a string), and anything without a faithful JSON form is refused.
//
// The frontmatter is the text between a first line "---" and the next line
// "---" (trailing spaces and tabs allowed on both). A leading UTF-8 BOM is
// skipped and CRLF or CR line endings parse the same as LF. fm is the JSON
// form of the YAML document: "null" for an empty one; callers decide whether
// they need a mapping. body is the rest of b after the closing delimiter line,
// byte for byte. ParseFrontmatter is pure and safe on any input.
//
// ParseFrontmatter does not judge portability: a plain scalar that YAML 1.1
// readers type differently (see [Ambiguity]) is read the 1.2 way without a
// word. [ParseFrontmatterAmbiguities] also reports those.
func ParseFrontmatter(b []byte) (fm json.RawMessage, body []byte, err error) {
	fm, body, _, err = ParseFrontmatterAmbiguities(b)
	return fm, body, err
}

// ParseFrontmatterAmbiguities is [ParseFrontmatter] that also returns, in
// document order, every plain scalar a YAML 1.1 reader (PyYAML's safe_load)
// reads as different JSON; nil when there is none or err is not nil. It is
// pure and safe on any input.
func ParseFrontmatterAmbiguities(b []byte) (fm json.RawMessage, body []byte, amb []Ambiguity, err error) {
	text, body, err := splitFrontmatter(b)
	if err != nil {
		return nil, nil, nil, err
	}
	if !utf8.Valid(text) {
		return nil, nil, nil, ErrFrontmatterEncoding
	}
	text = normalizeNewlines(text)
	if err := yaml11Breaks(text); err != nil {
		return nil, nil, nil, err
	}
	fm, amb, err = yamlToJSON(text)
	if err != nil {
		return nil, nil, nil, err
	}
	return fm, body, amb, nil
}

// splitFrontmatter returns the YAML text between the delimiter lines (line
// endings as written) and the body after the closing delimiter line.
func splitFrontmatter(b []byte) (text, body []byte, err error) {
	b = bytes.TrimPrefix(b, utf8BOM)
	line, rest := cutLine(b)
	if !isDelimiter(line) {
		return nil, nil, ErrNoFrontmatter
	}
	start := rest
	for len(rest) > 0 {
		line, next := cutLine(rest)
		if isDelimiter(line) {
			return start[:len(start)-len(rest)], next, nil
		}
		rest = next
	}
	return nil, nil, ErrUnterminatedFrontmatter
}

// cutLine splits b after its first line break (LF, CRLF or CR, as YAML 1.2
// §5.4 counts them) and returns the line without the break.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexAny(b, "\r\n")
	if i < 0 {
		return b, nil
	}
	if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
		return b[:i], b[i+2:]
	}
	return b[:i], b[i+1:]
}

func isDelimiter(line []byte) bool {
	return string(bytes.TrimRight(line, " \t")) == "---"
}

// normalizeNewlines turns CRLF and lone CR into LF. A YAML 1.2 parser
// normalizes line breaks inside scalars the same way (§5.4), so this only
// spares yaml.v3 the cases it handles differently.
func normalizeNewlines(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}

// yaml11Breaks refuses a raw NEL, LS or PS (U+0085, U+2028, U+2029) in the
// YAML text (LF line breaks only). YAML 1.1 readers (PyYAML, and yaml.v3,
// which this package parses with) take each for a line break; YAML 1.2
// readers for a character (YAML 1.2.2 §5.4). Raw, one can end a comment
// or fold a quoted string for one reader and not the other, so no JSON is
// what both read; escaped in a double-quoted string (\N, \L, \P), it is
// the same character to both.
func yaml11Breaks(text []byte) error {
	at, r := -1, rune(0)
	for _, b := range []rune{'\u0085', '\u2028', '\u2029'} {
		// In valid UTF-8 these bytes are only ever that character.
		if i := bytes.Index(text, utf8.AppendRune(nil, b)); i >= 0 && (at < 0 || i < at) {
			at, r = i, b
		}
	}
	if at < 0 {
		return nil
	}
	esc := map[rune]string{'\u0085': `\N`, '\u2028': `\L`, '\u2029': `\P`}[r]
	return fmt.Errorf("%w: line %d: a raw %U is a line break to YAML 1.1 readers (PyYAML) and a character to YAML 1.2 readers; write it as %s inside a double-quoted string",
		ErrFrontmatterSyntax, bytes.Count(text[:at], []byte("\n"))+2, r, esc)
}

// yamlToJSON parses one YAML document at the node level and writes its JSON
// form, with the plain scalars YAML 1.1 reads differently. It never panics:
// a panic inside the YAML library becomes a syntax error.
func yamlToJSON(text []byte) (out json.RawMessage, amb []Ambiguity, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, amb, err = nil, nil, fmt.Errorf("%w: parser failure: %v", ErrFrontmatterSyntax, r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return json.RawMessage("null"), nil, nil
		}
		return nil, nil, fmt.Errorf("%w: %v", ErrFrontmatterSyntax, trimYAMLPrefix(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrFrontmatterSyntax, trimYAMLPrefix(err))
		}
		return nil, nil, fmt.Errorf("%w: more than one YAML document", ErrFrontmatterSyntax)
	}
	c := converter{lines: strings.Split(string(text), "\n")}
	if len(doc.Content) == 0 {
		return json.RawMessage("null"), nil, nil
	}
	if err := c.node(doc.Content[0]); err != nil {
		return nil, nil, err
	}
	if bytes.IndexByte(text, '\t') >= 0 {
		if err := tabsPyYAMLRefuses(c.lines, doc.Content[0]); err != nil {
			return nil, nil, err
		}
	}
	return json.RawMessage(c.buf.Bytes()), c.amb, nil
}

// tabsPyYAMLRefuses refuses a tab PyYAML does not take. YAML 1.2 takes a
// tab for separating white space; PyYAML (YAML 1.1) takes one only inside
// a quoted scalar, in a block scalar's text past its indentation, and in a
// comment, and refuses the whole document for any other ("found character
// '\t' that cannot start any token"), so such a host could not read the
// skill at all. lines is the YAML text (LF breaks) of the document root.
func tabsPyYAMLRefuses(lines []string, root *yaml.Node) error {
	runes := make([][]rune, len(lines))
	for i, l := range lines {
		runes[i] = []rune(l)
	}
	// taken[line] holds the rune ranges [from, to) where a tab is text.
	taken := make([][][2]int, len(lines))
	take := func(l, from, to int) { taken[l] = append(taken[l], [2]int{from, to}) }
	var visit func(n *yaml.Node)
	visit = func(n *yaml.Node) {
		for _, k := range n.Content {
			visit(k)
		}
		if n.Kind != yaml.ScalarNode || n.Line < 1 || n.Line > len(lines) || n.Column < 1 {
			return
		}
		l, p := n.Line-1, n.Column-1
		switch {
		case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
			quotedSpan(runes, l, p, take)
		case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
			blockSpan(runes, l, take)
		}
	}
	visit(root)
	for l, line := range runes {
	scan:
		for i, r := range line {
			for _, t := range taken[l] {
				if i >= t[0] && i < t[1] {
					continue scan
				}
			}
			switch {
			case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
				break scan // a comment: the rest of the line
			case r == '\t':
				return fmt.Errorf("%w: line %d: a tab outside a quoted string, a block scalar's text or a comment; YAML 1.1 readers (PyYAML) refuse the whole frontmatter for it: use spaces",
					ErrFrontmatterSyntax, l+2)
			}
		}
	}
	return nil
}

// quotedSpan gives take the text of the quoted scalar whose opening quote is
// rune p of line l, quotes included; nothing when no quote is there.
func quotedSpan(runes [][]rune, l, p int, take func(l, from, to int)) {
	if p >= len(runes[l]) || runes[l][p] != '"' && runes[l][p] != '\'' {
		return
	}
	q, from := runes[l][p], p
	for p++; l < len(runes); l, p, from = l+1, 0, 0 {
		for ; p < len(runes[l]); p++ {
			switch r := runes[l][p]; {
			case q == '"' && r == '\\':
				p++ // the escaped character; at the end of a line, the break
			case q == '\'' && r == '\'' && p+1 < len(runes[l]) && runes[l][p+1] == '\'':
				p++
			case r == q:
				take(l, from, p+1)
				return
			}
		}
		take(l, from, len(runes[l])+1)
	}
}

// blockSpan gives take the text of the block scalar whose header is on line
// l: the lines after it up to the first that is not blank and is indented
// no deeper than the header's line, each from the indentation of the first
// line with text.
func blockSpan(runes [][]rune, l int, take func(l, from, to int)) {
	spaces := func(line []rune) int {
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		return n
	}
	header, indent := spaces(runes[l]), 0
	for l++; l < len(runes); l++ {
		s := spaces(runes[l])
		if s == len(runes[l]) {
			continue // blank
		}
		if indent == 0 {
			if s <= header {
				return
			}
			indent = s
		} else if s < indent {
			return
		}
		take(l, indent, len(runes[l]))
	}
}

func trimYAMLPrefix(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// converter writes the JSON form of a yaml.v3 node tree and notes the
// plain scalars YAML 1.1 reads differently.
type converter struct {
	buf   bytes.Buffer
	lines []string    // the YAML text, to see tags yaml.v3 drops
	path  []string    // keys and indexes from the root to the node at hand
	amb   []Ambiguity // in document order
	flow  int         // flow collections around the node at hand
}

// refuse builds an ErrFrontmatterNotJSON error pointing at n. Line numbers
// count from the opening delimiter, so they match the author's editor.
func refuse(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrFrontmatterNotJSON, n.Line+1, fmt.Sprintf(format, args...))
}

func (c *converter) node(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return refuse(n, "alias *%s is not allowed", n.Value)
	}
	if n.Anchor != "" {
		return refuse(n, "anchor &%s is not allowed", n.Anchor)
	}
	if n.Style&yaml.TaggedStyle != 0 || c.hasBangAt(n) {
		return refuse(n, "explicit tag %s is not allowed", tagName(n))
	}
	if n.Style&yaml.FlowStyle != 0 {
		c.flow++
		defer func() { c.flow-- }()
	}
	switch n.Kind {
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.SequenceNode:
		c.buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			c.path = append(c.path, "["+strconv.Itoa(i)+"]")
			if err := c.node(item); err != nil {
				return err
			}
			c.path = c.path[:len(c.path)-1]
		}
		c.buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return c.scalar(n)
	default:
		return refuse(n, "unexpected YAML node kind %d", n.Kind)
	}
}

// hasBangAt reports whether the source text at n's start is a tag. yaml.v3
// forgets the non-specific tag "!" (which makes `! 12` the string "12" in
// YAML 1.2); a node's start mark is at its first property, and no untagged
// node's text can begin with "!", so the character there tells.
func (c *converter) hasBangAt(n *yaml.Node) bool {
	if n.Line < 1 || n.Line > len(c.lines) || n.Column < 1 {
		return false
	}
	col := 1
	for _, r := range c.lines[n.Line-1] {
		if col == n.Column {
			return r == '!'
		}
		col++
	}
	return false
}

func tagName(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle != 0 && n.Tag != "" {
		return n.Tag
	}
	return "!"
}

func (c *converter) mapping(n *yaml.Node) error {
	seen := make(map[string]bool, len(n.Content)/2)
	c.buf.WriteByte('{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, err := c.key(k)
		if err != nil {
			return err
		}
		if seen[key] {
			return refuse(k, "duplicate key %q", key)
		}
		seen[key] = true
		if i > 0 {
			c.buf.WriteByte(',')
		}
		writeJSONString(&c.buf, key)
		c.buf.WriteByte(':')
		c.path = append(c.path, key)
		if err := c.node(v); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
	}
	c.buf.WriteByte('}')
	return nil
}

// key returns a mapping key as a string, or refuses keys that are not
// strings under the core schema (JSON object keys are strings, and a client
// would compare `1: x` as an integer key).
func (c *converter) key(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode {
		return "", refuse(k, "alias *%s is not allowed", k.Value)
	}
	if k.Anchor != "" {
		return "", refuse(k, "anchor &%s is not allowed", k.Anchor)
	}
	if k.Style&yaml.TaggedStyle != 0 || c.hasBangAt(k) {
		return "", refuse(k, "explicit tag %s is not allowed", tagName(k))
	}
	if k.Kind != yaml.ScalarNode {
		return "", refuse(k, "mapping key is a collection, not a string")
	}
	if isQuotedOrBlock(k) {
		return k.Value, nil
	}
	if k.Value == "<<" {
		return "", refuse(k, "merge key \"<<\" is not allowed")
	}
	if err := c.flowColon(k); err != nil {
		return "", err
	}
	if t := coreTag(k.Value); t != tagStr {
		return "", refuse(k, "mapping key %q is a %s, not a string", k.Value, t)
	}
	c.check11(k, tagStr, true)
	return k.Value, nil
}

func isQuotedOrBlock(n *yaml.Node) bool {
	return n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
}

func (c *converter) scalar(n *yaml.Node) error {
	if isQuotedOrBlock(n) {
		writeJSONString(&c.buf, n.Value)
		return nil
	}
	if err := c.flowColon(n); err != nil {
		return err
	}
	tag := coreTag(n.Value)
	if err := c.plainScalar(n, tag); err != nil {
		return err
	}
	c.check11(n, tag, false)
	return nil
}

// plainScalar writes the JSON of a plain scalar the core schema types as tag.
func (c *converter) plainScalar(n *yaml.Node, tag string) error {
	switch tag {
	case tagNull:
		c.buf.WriteString("null")
	case tagBool:
		c.buf.WriteString(strings.ToLower(n.Value))
	case tagInt:
		i, ok := parseCoreInt(n.Value)
		if !ok {
			return refuse(n, "integer %q cannot be parsed", n.Value)
		}
		c.buf.WriteString(i.String())
	case tagFloat:
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return refuse(n, "%q is NaN, infinite or out of range; JSON has no such number", n.Value)
		}
		b, err := json.Marshal(f)
		if err != nil {
			return refuse(n, "number %q: %v", n.Value, err)
		}
		c.buf.Write(b)
	case tagInfNaN:
		return refuse(n, "%q is NaN or infinite; JSON has no such number", n.Value)
	default:
		writeJSONString(&c.buf, n.Value)
	}
	return nil
}

// flowColon refuses a plain scalar ending in ":" inside a flow collection.
// YAML 1.2 (§7.3.3) ends a plain scalar at a ":" followed by a flow
// indicator, so `[a:, b]` holds the mapping {a: null}; yaml.v3 reads the
// string "a:", and the JSON would differ from every other reader's.
func (c *converter) flowColon(n *yaml.Node) error {
	if c.flow > 0 && strings.HasSuffix(n.Value, ":") {
		return fmt.Errorf("%w: line %d: plain scalar %q ends with \":\" inside a flow collection, where YAML readers disagree; quote it",
			ErrFrontmatterSyntax, n.Line+1, n.Value)
	}
	return nil
}

// maxImplicitKey is the most characters an implicit key (one without "?")
// may have: YAML 1.2.2 §7.4.2 wants its ":" at most 1024 Unicode characters
// past the key's start, and YAML 1.1 readers (PyYAML, libyaml, yaml.v3)
// refuse a longer simple key. A plain key this long is fine, but its
// quoted spelling is 2 characters longer, so such a fix is an explicit key.
const maxImplicitKey = 1024

// check11 notes the plain scalar n (core tag, a mapping key when key) when
// YAML 1.1 reads it as different JSON. A key's path ends with the key.
func (c *converter) check11(n *yaml.Node, tag string, key bool) {
	reads11 := yaml11Differs(n.Value, tag, key)
	if reads11 == "" {
		return
	}
	path := c.path
	if key {
		path = append(slices.Clip(c.path), n.Value)
	}
	a := Ambiguity{Line: n.Line + 1, Path: joinPath(path), Key: key, Text: n.Value,
		YAML11: reads11, YAML12: describe12(n.Value, tag)}
	var quoted bytes.Buffer
	writeJSONString(&quoted, n.Value)
	switch {
	case key && utf8.RuneCount(quoted.Bytes()) > maxImplicitKey:
		a.Fix = "? " + quoted.String() + ` with ": ..." on the next line (quoted, the key is too long to be implicit)`
	case key:
		a.Fix = quoted.String() + ": ..."
	case len(c.path) > 0 && !strings.HasPrefix(c.path[len(c.path)-1], "["):
		a.Fix = c.path[len(c.path)-1] + ": " + quoted.String()
	case len(c.path) > 0:
		a.Fix = "- " + quoted.String()
	default:
		a.Fix = quoted.String()
	}
	c.amb = append(c.amb, a)
}

// joinPath writes a node's path as "metadata.version" or "tags[2]"; "" is
// the document itself.
func joinPath(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func parseCoreInt(s string) (*big.Int, bool) {
	i := new(big.Int)
	switch {
	case strings.HasPrefix(s, "0o"):
		return i.SetString(s[2:], 8)
	case strings.HasPrefix(s, "0x"):
		return i.SetString(s[2:], 16)
	default:
		return i.SetString(strings.TrimPrefix(s, "+"), 10)
	}
}

// writeJSONString writes s as a JSON string without HTML escaping, so the
// frontmatter reads the way the author wrote it. NEL (U+0085) is escaped,
// as encoding/json already escapes LS and PS (U+2028, U+2029): YAML 1.1
// readers (PyYAML, yaml.v3) take all three for line breaks even inside a
// quoted string, so a host reading the JSON as YAML would see a space where
// the author wrote one of them. Escaped, the JSON is the same value and
// reads alike to every YAML reader.
func writeJSONString(buf *bytes.Buffer, s string) {
	start := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
	if strings.Contains(s, "\u0085") {
		// Valid UTF-8 out of the encoder holds these two bytes only as NEL.
		escaped := bytes.ReplaceAll(buf.Bytes()[start:], []byte("\u0085"), []byte(`\u0085`))
		buf.Truncate(start)
		buf.Write(escaped)
	}
}
