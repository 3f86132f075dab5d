package upstreamfiles

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMatchTemplateRFC6570 matches the expansions RFC 6570 itself gives
// (§1.2, levels 1 to 3, with its variables var := "value", hello := "Hello
// World!", path := "/foo/bar", empty := "", x := "1024", y := "768"): every
// expansion must match its template. The negative rows are strings no
// choice of values expands the template to.
func TestMatchTemplateRFC6570(t *testing.T) {
	t.Parallel()
	tests := []struct {
		template, uri string
		want          bool
	}{
		// Level 1.
		{"{var}", "value", true},
		{"{hello}", "Hello%20World%21", true},
		// Level 2.
		{"{+var}", "value", true},
		{"{+hello}", "Hello%20World!", true},
		{"{+path}/here", "/foo/bar/here", true},
		{"here?ref={+path}", "here?ref=/foo/bar", true},
		{"X{#var}", "X#value", true},
		{"X{#hello}", "X#Hello%20World!", true},
		// Level 3.
		{"map?{x,y}", "map?1024,768", true},
		{"{x,hello,y}", "1024,Hello%20World%21,768", true},
		{"{+x,hello,y}", "1024,Hello%20World!,768", true},
		{"{+path,x}/here", "/foo/bar,1024/here", true},
		{"{#x,hello,y}", "#1024,Hello%20World!,768", true},
		{"{#path,x}/here", "#/foo/bar,1024/here", true},
		{"X{.var}", "X.value", true},
		{"X{.x,y}", "X.1024.768", true},
		{"{/var}", "/value", true},
		{"{/var,x}/here", "/value/1024/here", true},
		{"{;x,y}", ";x=1024;y=768", true},
		{"{;x,y,empty}", ";x=1024;y=768;empty", true},
		{"{?x,y}", "?x=1024&y=768", true},
		{"{?x,y,empty}", "?x=1024&y=768&empty=", true},
		{"?fixed=yes{&x}", "?fixed=yes&x=1024", true},
		{"{&x,y,empty}", "&x=1024&y=768&empty=", true},
		// Undefined variables expand to nothing (§3.2.1).
		{"{var}", "", true},
		{"X{.var}", "X", true},
		{"{?x,y}", "?y=768", true},
		{"{;x,y}", ";y=768", true},
		// Not expansions.
		{"{hello}", "Hello World!", false}, // a simple value is percent-encoded
		{"{var}", "a/b", false},            // "/" is reserved: not in a simple value
		{"{+path}/here", "/foo/bar/there", false},
		{"{/var}", "/a/b", false}, // one variable, one segment
		{"{/var,x}/here", "/a/b/c/here", false},
		{"{?x,y}", "?y=768&x=1024", false}, // order is the template's
		{"{;x,y}", ";z=1", false},
		{"X{.x,y}", "Y.1024", false},
		{"map?{x,y}", "map?1,2,3", false}, // two variables, at most two values
		{"{var}", "%zz", false},
		// The shapes upstreams serve skill files with.
		{"skill://{name}/SKILL.md", "skill://pdf/SKILL.md", true},
		{"skill://{name}/SKILL.md", "skill://a/b/SKILL.md", false},
		{"skill://{name}/{+path}", "skill://pdf/scripts/fill.py", true},
		{"skill://pdf{/file}", "skill://pdf/forms.md", true},
		{"skill://pdf{/file}", "skill://docx/forms.md", false},
		// Literals between expressions, one of them empty between them.
		{"skill://{a}/x{b}/y{c}.md", "skill://p/x/y.md", true},
		{"skill://{a}/x{b}/y{c}.md", "skill://p/xq/yr.md", true},
		{"skill://{a}/x{b}/y{c}.md", "skill://p/y/x.md", false},
		{"skill://{a}/v1/{+b}", "skill://p/v1/q/r.md", true},
		{"skill://{a}/v1/{+b}", "skill://p/v2/q/r.md", false},
		// Not templates: nothing matches.
		{"skill://{name", "skill://{name", false},
		{"skill://{}/x", "skill:///x", false},
		{"skill://{=x}/y", "skill://a/y", false},
		{"skill://a/b", "skill://a/b", true}, // no expression: itself only
		{"skill://a/b", "skill://a/bc", false},
	}
	for _, tt := range tests {
		if got := matchTemplate(tt.template, tt.uri); got != tt.want {
			t.Errorf("matchTemplate(%q, %q) = %v, want %v", tt.template, tt.uri, got, tt.want)
		}
	}
}

// FuzzMatchTemplate: any template and URI are judged without a panic, a
// template with no expression matches exactly itself, a template's
// literal prefix (before its first expression) starts every URI it matches,
// and the literal checks before the expression never change its verdict on
// a valid UTF-8 URI.
func FuzzMatchTemplate(f *testing.F) {
	f.Add("skill://{name}/SKILL.md", "skill://pdf/SKILL.md")
	f.Add("{?x,y,empty}", "?x=1024&y=768&empty=")
	f.Add("{#path,x}/here", "#/foo/bar,1024/here")
	f.Add("a{b", "a{b")
	f.Add("{x*}{;y:3}", ";y=abc")
	f.Add("skill://\uFFFD/{x}", "skill://\xff/a")
	f.Add("skill://{a}/x{b}/y{c}.md", "skill://p/x/y.md")
	f.Fuzz(func(t *testing.T, template, uri string) {
		got := matchTemplate(template, uri)
		if !strings.ContainsAny(template, "{}") && got != (template == uri) {
			t.Fatalf("literal template %q vs %q: %v", template, uri, got)
		}
		if i := strings.IndexByte(template, '{'); got && i >= 0 && !strings.HasPrefix(uri, template[:i]) {
			t.Fatalf("%q matched %q without its literal prefix", template, uri)
		}
		// On a URI that is not valid UTF-8 the literals, compared as
		// bytes, are stricter than the expression, which reads a bad
		// byte as U+FFFD; catalog URIs are valid UTF-8.
		if ut := compileTemplate(template); ut != nil && utf8.ValidString(uri) && ut.match(uri) != ut.re.MatchString(uri) {
			t.Fatalf("%q against %q: the literal checks say %v, the expression %v", template, uri, ut.match(uri), ut.re.MatchString(uri))
		}
	})
}

// BenchmarkServedSetTemplates matches a 100-skill × 20-file page against
// an upstream's maxTemplates templates of five shapes, none matching: with
// the literal checks ("literals first") and with the expression alone, the
// baseline measured in the same run.
func BenchmarkServedSetTemplates(b *testing.B) {
	var uris []string
	for s := range 100 {
		for f := range 20 {
			uris = append(uris, fmt.Sprintf("skill://skill-%03d/references/file-%03d.md", s, f))
		}
	}
	for _, shape := range []string{"skill://other-%d/{name}/SKILL.md", "{+path}/extra-%d.md", "skill://{a}/{b}/f%d", "skill://{a}/v%d/{+b}", "skill://{+a}/x%d/{b}.md"} {
		var ts []*uriTemplate
		for i := range maxTemplates {
			ts = append(ts, compileTemplate(fmt.Sprintf(shape, i)))
		}
		b.Run(shape+"/literals first", func(b *testing.B) {
			set := &servedSet{templates: ts}
			for b.Loop() {
				for _, u := range uris {
					if set.serves(u) {
						b.Fatalf("%s served", u)
					}
				}
			}
		})
		b.Run(shape+"/expression alone", func(b *testing.B) {
			for b.Loop() {
				for _, u := range uris {
					for _, t := range ts {
						if t.re.MatchString(u) {
							b.Fatalf("%s matched", u)
						}
					}
				}
			}
		})
	}
}

// TestLongExpressionsMatch: an expression of many variables (far past
// maxExactVars, still under maxTemplateBytes) compiles for every operator
// and matches an expansion of it, loosely: the pattern stays linear in the
// variables, and nothing falls past the regexp package's bounds into
// matching nothing (a 502-variable {…} did).
func TestLongExpressionsMatch(t *testing.T) {
	names := make([]string, 600)
	for i := range names {
		names[i] = "v"
	}
	list := strings.Join(names, ",")
	for _, tt := range []struct{ op, uri string }{
		{"", "skill://x/a,b"},
		{"+", "skill://x/a/b,c"},
		{"#", "skill://x/#a,b"},
		{".", "skill://x/.a.b"},
		{"/", "skill://x//a/b"},
		{";", "skill://x/;v=a;v"},
		{"?", "skill://x/?v=a&v=b"},
		{"&", "skill://x/&v=a&v=b"},
	} {
		template := "skill://x/{" + tt.op + list + "}"
		if len(template) > maxTemplateBytes {
			t.Fatalf("%d-byte template: the test must stay under maxTemplateBytes", len(template))
		}
		ut := compileTemplate(template)
		if ut == nil {
			t.Errorf("{%s…} of %d variables does not compile", tt.op, len(names))
			continue
		}
		if !ut.match(tt.uri) {
			t.Errorf("{%s…} of %d variables does not match %q", tt.op, len(names), tt.uri)
		}
	}
}
