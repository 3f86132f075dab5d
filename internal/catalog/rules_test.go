package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestModelRole(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"opus": RoleLarge, "sonnet": RoleMedium, "haiku": RoleSmall,
		"Opus": RoleLarge, "SONNET": RoleMedium,
		"claude-sonnet-4-5": RoleMedium, "claude-3-5-haiku-20241022": RoleSmall,
		"claude-opus-4-1@20250805": RoleLarge, "anthropic/claude-haiku-4.5": RoleSmall,
		"inherit": "", "": "", "gpt-4o": "", "sonnets": "", "magnum-opus2": "",
	}
	for model, want := range tests {
		if got := modelRole(model); got != want {
			t.Errorf("modelRole(%q) = %q, want %q", model, got, want)
		}
	}
}

// TestParseAgentDerivedFields covers the fields derived from an agent file.
func TestParseAgentDerivedFields(t *testing.T) {
	t.Parallel()
	ix := newSkillIndex([]*Skill{
		{Path: "acme/billing/refunds", Name: "refunds", URI: "skill://acme/billing/refunds/SKILL.md"},
		{Path: "other/refunds", Name: "refunds", URI: "skill://other/refunds/SKILL.md"},
		{Path: "notes", Name: "notes", URI: "skill://notes/SKILL.md"},
	})
	type want struct {
		Description, Instructions, Model, ModelRole string
		HasInstructions                             bool
		Capabilities, Tools                         []string
		Skills                                      []AgentSkill
		Warnings                                    []issue
	}
	base := "---\nname: a\ndescription: d\n"
	tests := map[string]struct {
		in   string
		want want
	}{
		"minimal": {
			in:   base + "---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"description collapsed": {
			in:   "---\nname: a\ndescription: \"  two\\n\\tlines   here \"\n---\n",
			want: want{Description: "two lines here", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"crlf body trimmed": {
			in:   "---\r\nname: a\r\ndescription: d\r\n---\r\n\r\n  Line one.\r\nLine two.\r\n\r\n",
			want: want{Description: "d", Instructions: "Line one.\nLine two.", HasInstructions: true, Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"blank body": {
			in:   base + "---\n \n\t\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"tools as string": {
			in:   base + "tools: Read, Grep ,, Bash(git:*)\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{"Read", "Grep", "Bash(git:*)"}, Skills: []AgentSkill{}},
		},
		"tools as list, non-strings dropped": {
			in:   base + "tools: [Read, 7, \" Grep \", {x: 1}]\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{"Read", "Grep"}, Skills: []AgentSkill{}},
		},
		"capabilities strings only": {
			in:   base + "capabilities: [billing, 3, true, refunds, [x]]\n---\n",
			want: want{Description: "d", Capabilities: []string{"billing", "refunds"}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"capabilities not a list": {
			in:   base + "capabilities: billing\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"model non-string": {
			in:   base + "model: 4\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"model inherit": {
			in:   base + "model: inherit\n---\n",
			want: want{Description: "d", Model: "inherit", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"model id": {
			in:   base + "model: claude-opus-4-1\n---\n",
			want: want{Description: "d", Model: "claude-opus-4-1", ModelRole: RoleLarge, Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"skills by name and path": {
			in: base + "skills: [notes, other/refunds, 5, missing]\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{},
				Skills:   []AgentSkill{{"notes", "skill://notes/SKILL.md"}, {"other/refunds", "skill://other/refunds/SKILL.md"}},
				Warnings: []issue{{KindReference, `skill "missing" is not served by this plugin`}}},
		},
		"ambiguous skill name": {
			in: base + "skills: [refunds]\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{},
				Skills:   []AgentSkill{{"refunds", "skill://acme/billing/refunds/SKILL.md"}, {"refunds", "skill://other/refunds/SKILL.md"}},
				Warnings: []issue{{KindReference, `skill "refunds" names 2 skills; all are listed (use a skill path such as "acme/billing/refunds" to pick one)`}}},
		},
		"skills as bare string": {
			in:   base + "skills: notes\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
		"skills as map": {
			in:   base + "skills: {notes: true}\n---\n",
			want: want{Description: "d", Capabilities: []string{}, Tools: []string{}, Skills: []AgentSkill{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, warnings, bad := parseAgent("agents/a.md", []byte(tc.in), ix)
			if bad != nil {
				t.Fatalf("parseAgent skipped: %v", *bad)
			}
			got := want{a.Description, a.Instructions, a.Model, a.ModelRole, a.HasInstructions, a.Capabilities, a.Tools, a.Skills, warnings}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(issue{})); diff != "" {
				t.Errorf("parseAgent(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestAgentNameRule(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"triage": true, "Billing Triage": false, "billing_triage.v2": true, "日本語": true,
		"a/b": false, "a@b": false, "tab\there": false, "nl\n": false, "nbsp\u00a0x": false,
		"zw\u200bj": false, "bidi\u202e": false, "private\ue000": false, "unassigned\U000e0080": false,
		"bell\a": false, "": false,
	}
	for name, ok := range tests {
		if got := agentNameProblem(name) == ""; got != ok {
			t.Errorf("agentNameProblem(%q) = %q, want ok=%v", name, agentNameProblem(name), ok)
		}
	}
}

func TestValidSkillName(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"a": true, "refunds": true, "pdf-2-text": true, "x9": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "-a": false, "a-": false, "a--b": false,
		"A": false, "a_b": false, "a.b": false, "é": false, "a b": false,
	}
	for name, want := range tests {
		if got := ValidSkillName(name); got != want {
			t.Errorf("ValidSkillName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		name, data string
		wantType   string
		wantText   bool
	}{
		"skill md":         {"SKILL.md", "# x", "text/markdown", true},
		"skill md latin1":  {"SKILL.md", "caf\xe9", "text/markdown", false},
		"markdown":         {"notes.MD", "x", "text/markdown", true},
		"python":           {"a.py", "print(1)", "text/x-python", true},
		"json":             {"a.json", "{}", "application/json", true},
		"yaml":             {"a.yml", "a: 1", "application/yaml", true},
		"shell":            {"run.sh", "echo", "text/x-shellscript", true},
		"csv":              {"t.csv", "a,b", "text/csv", true},
		"svg":              {"i.svg", "<svg/>", "image/svg+xml", true},
		"png":              {"i.png", "\x89PNG\r\n", "image/png", false},
		"pdf":              {"d.pdf", "%PDF-", "application/pdf", false},
		"text not utf8":    {"a.txt", "\xff\xfe", "text/plain", false},
		"no ext text":      {"LICENSE", "MIT", "text/plain", true},
		"no ext binary":    {"blob", "\x00\x01", "application/octet-stream", false},
		"no ext bad utf8":  {"Makefile", "\xff", "application/octet-stream", false},
		"unknown ext":      {"x.bin", "abc", "application/octet-stream", false},
		"unknown ext utf8": {"x.weird", "abc", "application/octet-stream", false},
	}
	for name, tc := range tests {
		gotType, gotText := classify(tc.name, []byte(tc.data))
		if gotType != tc.wantType || gotText != tc.wantText {
			t.Errorf("%s: classify(%q) = %q, %v; want %q, %v", name, tc.name, gotType, gotText, tc.wantType, tc.wantText)
		}
	}
}

// pathCases is the table of ValidatePath; the fuzz target is seeded from it.
var pathCases = map[string]bool{
	"refunds": true, "acme/billing/refunds/SKILL.md": true, "a/b-c_d.e~f": true,
	"x/(1)+[]": false, "x/it's": true, "données/été.md": true, "a/b:c@d": true,
	"": false, "/abs": false, "a/": false, "a//b": false, "./a": false, "a/./b": false,
	"a/../b": false, "..": false, "a/.hidden": false, ".git/config": false,
	"a b": false, "a%20b": false, "a?b": false, "a#b": false, "a\\b": false,
	"a\x00b": false, "a\nb": false, "a\u200bb": false, "a\u00a0b": false, "\xff": false,
	"a|b": false, "a\"b": false, "a<b": false, "a{b}": false, "a`b": false, "a^b": false,
}

func TestValidatePath(t *testing.T) {
	t.Parallel()
	for p, ok := range pathCases {
		err := ValidatePath(p)
		if (err == nil) != ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", p, err, ok)
		}
		if err != nil && !errors.Is(err, ErrBadPath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrBadPath", p, err)
		}
	}
	if err := ValidatePath(strings.Repeat("a/", 3000) + "a"); err == nil {
		t.Error("ValidatePath(very long) = nil, want an error")
	}
}

func TestPathFromURI(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"skill://acme/billing/refunds/SKILL.md": "acme/billing/refunds/SKILL.md",
		"skill://a":                             "a",
		"skill://a/":                            "",
		"skill:///a":                            "",
		"skill://a/../../etc/passwd":            "",
		"file:///etc/passwd":                    "",
		"SKILL://a":                             "",
		"skill:/a":                              "",
	}
	for uri, want := range tests {
		got, err := PathFromURI(uri)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("PathFromURI(%q) = %q, %v; want %q", uri, got, err, want)
		}
	}
}

func FuzzValidatePath(f *testing.F) {
	for p := range pathCases {
		f.Add(p)
		f.Add(Scheme + p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := PathFromURI(s)
		if err != nil {
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("PathFromURI(%q) error %v does not wrap ErrBadPath", s, err)
			}
			return
		}
		if URIFromPath(p) != s {
			t.Fatalf("PathFromURI(%q) = %q, which does not round-trip", s, p)
		}
		// A path that passes names a place inside the root.
		if strings.HasPrefix(p, "/") || strings.HasPrefix(p, ".") || strings.Contains(p, "/.") ||
			strings.Contains(p, "//") || strings.HasSuffix(p, "/") || strings.ContainsAny(p, "\\%?# \x00") {
			t.Fatalf("PathFromURI(%q) accepted %q", s, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == ".." || seg == "." || seg == "" {
				t.Fatalf("PathFromURI(%q) accepted segment %q", s, seg)
			}
		}
	})
}
