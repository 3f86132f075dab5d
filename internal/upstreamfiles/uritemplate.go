package upstreamfiles

import (
	"regexp"
	"strings"
)

// URI templates (RFC 6570) tell which URIs an upstream serves besides the
// ones it lists: resources/templates/list gives templates such as
// skill://{name}/SKILL.md, and a catalog URI that some expansion of one of
// them produces is the upstream's. Matching is the reverse of expansion: a
// template becomes an anchored regular expression accepting every string
// some choice of variable values (defined, empty or undefined) expands to.
//
// Levels 1 to 3 are matched exactly as the RFC expands them: simple {x},
// reserved {+x}, fragment {#x}, label {.x}, path {/x}, path-style
// parameters {;x}, form query {?x} and continuation {&x}, each with one or
// more variables. Level 4's modifiers are accepted loosely (a prefix {x:3}
// matches what {x} matches; an exploded {x*} any number of values), which
// can only make a URI the upstream's that the upstream then answers as not
// found: the cost of a read, never a wrong digest. So is an expression of
// more than maxExactVars variables.

// maxTemplateBytes bounds a template the matcher compiles; a longer one
// matches nothing.
const maxTemplateBytes = 2048

// maxExactVars is the most variables of one expression matched exactly.
// An expression of more is matched loosely: any number of values and, in
// a form query ({?…}), the variables in any order. Exact patterns for more
// would outgrow the regexp package's bounds (a repeat count past 1000) or
// grow with the square of the count ({?…}: a 1,000-variable expression
// took 18 s to compile). Loose matching can only make a file the
// upstream's that it then answers as not found: the cost of a read.
const maxExactVars = 16

// uriTemplate is a compiled template. Every URI it matches starts with the
// template's text before its first expression, ends with its text after the
// last, and holds the texts between expressions in order, so those are
// looked for before the expression runs: a page's files are matched
// against every template of the upstream (up to maxTemplates), and most of
// them lack some literal of most templates.
type uriTemplate struct {
	prefix, suffix string
	middle         []string // the non-empty literals between expressions, in order
	min            int      // the length of all the literals
	re             *regexp.Regexp
}

// match reports whether uri is an expansion of t. The literals are compared
// as bytes, so a URI that is not valid UTF-8 never matches a literal that
// is (the expression alone would read a bad byte as U+FFFD); catalog URIs
// are valid UTF-8. Each middle literal is taken at its leftmost place after
// the one before: if the literals fit in some order-keeping places, they fit
// in those.
func (t *uriTemplate) match(uri string) bool {
	if len(uri) < t.min || !strings.HasPrefix(uri, t.prefix) || !strings.HasSuffix(uri, t.suffix) {
		return false
	}
	rest := uri[len(t.prefix) : len(uri)-len(t.suffix)]
	for _, lit := range t.middle {
		i := strings.Index(rest, lit)
		if i < 0 {
			return false
		}
		rest = rest[i+len(lit):]
	}
	return t.re.MatchString(uri)
}

// compileTemplate returns the matcher of template, or nil when template is
// not a URI template (an unclosed or empty expression, a bad variable name).
func compileTemplate(template string) *uriTemplate {
	if len(template) > maxTemplateBytes {
		return nil
	}
	var b strings.Builder
	var lits []string // the text before each expression, and after the last
	b.WriteString(`\A`)
	for rest := template; ; {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			lits = append(lits, rest)
			break
		}
		b.WriteString(regexp.QuoteMeta(rest[:open]))
		lits = append(lits, rest[:open])
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil
		}
		expr, ok := expressionPattern(rest[open+1 : open+end])
		if !ok {
			return nil
		}
		b.WriteString(expr)
		rest = rest[open+end+1:]
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	t := &uriTemplate{prefix: lits[0], re: re}
	if len(lits) > 1 {
		t.suffix = lits[len(lits)-1]
		for _, lit := range lits[1 : len(lits)-1] {
			if lit != "" {
				t.middle = append(t.middle, lit)
			}
		}
	}
	for _, lit := range lits {
		t.min += len(lit)
	}
	return t
}

// matchTemplate reports whether uri is an expansion of template (see
// compileTemplate); a string that is not a template matches nothing.
func matchTemplate(template, uri string) bool {
	if !strings.ContainsAny(template, "{}") {
		// A template without expressions is its one URI; compared as bytes,
		// since a regexp refuses a template that is not valid UTF-8.
		return template == uri
	}
	t := compileTemplate(template)
	return t != nil && t.match(uri)
}

// Character classes of an expanded value (RFC 6570 §1.5): unreserved
// characters and percent-encodings, plus the reserved set for + and #.
const (
	unreservedValue = `(?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})*`
	reservedValue   = `(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*`
)

// templateVar is one variable of an expression.
type templateVar struct {
	name    string
	explode bool
}

// expressionPattern is the pattern of the expression between { and }.
func expressionPattern(expr string) (string, bool) {
	if expr == "" {
		return "", false
	}
	op := byte(0)
	if strings.IndexByte("+#./;?&", expr[0]) >= 0 {
		op, expr = expr[0], expr[1:]
	} else if strings.IndexByte("=,!@|", expr[0]) >= 0 {
		return "", false // reserved for future extensions (§2.2)
	}
	var vars []templateVar
	for _, spec := range strings.Split(expr, ",") {
		v, ok := parseVarspec(spec)
		if !ok {
			return "", false
		}
		vars = append(vars, v)
	}
	value := unreservedValue
	if op == '+' || op == '#' {
		value = reservedValue
	}
	switch op {
	case 0, '+', '#':
		// Values joined by "," (an exploded list's too); # prefixes "#"
		// when any is defined.
		list := `(?:` + value + `(?:,` + value + `)*)?`
		if !anyExplode(vars) && len(vars) <= maxExactVars {
			list = `(?:` + value + `(?:,` + value + `){0,` + itoa(len(vars)-1) + `})?`
		}
		if op == '#' {
			return `(?:#` + list + `)?`, true
		}
		return list, true
	case '.', '/':
		sep := regexp.QuoteMeta(string(op))
		if anyExplode(vars) || len(vars) > maxExactVars {
			return `(?:` + sep + value + `)*`, true
		}
		return `(?:` + sep + value + `){0,` + itoa(len(vars)) + `}`, true
	case ';':
		var b strings.Builder
		for _, v := range vars {
			b.WriteString(`(?:;` + named(v, value, `(?:=`+value+`)?`) + `)`)
			b.WriteString(repeat(v))
		}
		return b.String(), true
	case '&':
		var b strings.Builder
		for _, v := range vars {
			b.WriteString(`(?:&` + named(v, value, `=`+value) + `)` + repeat(v))
		}
		return b.String(), true
	default: // '?': the first defined variable after "?", the rest after "&"
		if len(vars) > maxExactVars {
			// Each variable's alternative lists every later one: past
			// maxExactVars that pattern's size grows too fast, so any
			// of the variables, in any order and number.
			var names []string
			for _, v := range vars {
				names = append(names, named(v, value, `=`+value))
			}
			oneOf := `(?:` + strings.Join(names, "|") + `)`
			return `(?:\?` + oneOf + `(?:&` + oneOf + `)*)?`, true
		}
		var alts []string
		for i, v := range vars {
			alt := named(v, value, `=`+value)
			if v.explode {
				alt += `(?:&` + named(v, value, `=`+value) + `)*`
			}
			for _, w := range vars[i+1:] {
				alt += `(?:&` + named(w, value, `=`+value) + `)` + repeat(w)
			}
			alts = append(alts, alt)
		}
		return `(?:\?(?:` + strings.Join(alts, "|") + `))?`, true
	}
}

// named is the pattern of one name=value pair of ; ? and &: the variable's
// own name, or for an exploded one any key (an associative array's).
func named(v templateVar, value, tail string) string {
	if v.explode {
		return value + tail
	}
	return regexp.QuoteMeta(v.name) + tail
}

// repeat makes a named pair optional: once for a plain variable, any number
// of times for an exploded one.
func repeat(v templateVar) string {
	if v.explode {
		return `*`
	}
	return `?`
}

func anyExplode(vars []templateVar) bool {
	for _, v := range vars {
		if v.explode {
			return true
		}
	}
	return false
}

// parseVarspec parses varname [ ":" max-length | "*" ] (§2.3, §2.4).
func parseVarspec(spec string) (templateVar, bool) {
	v := templateVar{}
	if n, ok := strings.CutSuffix(spec, "*"); ok {
		v.explode, spec = true, n
	} else if i := strings.IndexByte(spec, ':'); i >= 0 {
		l := spec[i+1:]
		if l == "" || len(l) > 4 || l[0] == '0' || strings.Trim(l, "0123456789") != "" {
			return v, false
		}
		spec = spec[:i]
	}
	if spec == "" {
		return v, false
	}
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		case c == '.' && i > 0 && spec[i-1] != '.' && i < len(spec)-1:
		case c == '%' && i+2 < len(spec) && isHex(spec[i+1]) && isHex(spec[i+2]):
			i += 2
		default:
			return v, false
		}
	}
	v.name = spec
	return v, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
