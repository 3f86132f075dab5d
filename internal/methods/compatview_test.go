package methods

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// TestCompatName: names come from the skill's path, not its name alone,
// and hold only the characters tool names may hold wherever hosts pass
// them to models.
func TestCompatName(t *testing.T) {
	t.Parallel()
	allowed := regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	tests := []struct{ path, want string }{
		{"refunds", "skill_refunds"},
		{"a/refunds", "skill_a__refunds"},
		{"b/refunds", "skill_b__refunds"},
		{"acme/billing/refund-v2", "skill_acme__billing__refund-v2"},
		{"dots.and spaces/ü", "skill_dots_and_spaces___"},
		{strings.Repeat("x", 122), "skill_" + strings.Repeat("x", 122)},
		{strings.Repeat("x", 123), ""}, // past MaxCompatNameLen: no prompt
	}
	for _, tt := range tests {
		got := compatName("skill_", tt.path)
		if got != tt.want {
			t.Errorf("compatName(%q) = %q, want %q", tt.path, got, tt.want)
		}
		if got != "" && !allowed.MatchString(got) {
			t.Errorf("compatName(%q) = %q, outside the allowed characters", tt.path, got)
		}
	}
}

// TestLoadDescriptionCap: the loading tool's description lists every
// skill while they fit, and past MaxLoadDescription ends with a marker
// counting the ones left out.
func TestLoadDescriptionCap(t *testing.T) {
	t.Parallel()
	mk := func(n int) []*catalog.Skill {
		var out []*catalog.Skill
		for i := range n {
			out = append(out, &catalog.Skill{Path: fmt.Sprintf("s%03d", i), Description: strings.Repeat("d", 300)})
		}
		return out
	}
	few := loadDescription(mk(3), "skill_read")
	if strings.Contains(few, "more skills not listed") || strings.Count(few, "\n- ") != 3 {
		t.Errorf("3 skills: %q, want all three listed and no marker", few)
	}
	if !strings.Contains(few, strings.Repeat("d", maxListedDescription-len("…"))+"…") {
		t.Errorf("a long description is not cut at %d bytes: %q", maxListedDescription, few)
	}
	many := loadDescription(mk(100), "skill_read")
	listed := strings.Count(many, "\n- ")
	if len(many) > MaxLoadDescription || listed == 100 || listed == 0 {
		t.Fatalf("100 skills: %d bytes, %d listed; want at most %d bytes and some left out", len(many), listed, MaxLoadDescription)
	}
	if want := fmt.Sprintf("… and %d more skills not listed here", 100-listed); !strings.Contains(many, want) {
		t.Errorf("100 skills: marker %q missing from the end %q", want, many[len(many)-120:])
	}
}

// TestOwnName: a request names one of the sidecar's tools or prompts by
// its JSON string, escapes and all; anything else names none.
func TestOwnName(t *testing.T) {
	t.Parallel()
	c := &compatView{loadName: "skill_load", readName: "skill_read", promptNames: []string{"skill_docs"}, promptIndex: map[string]int{"skill_docs": 0}}
	tests := []struct {
		method, raw, want string
		ok                bool
	}{
		{"tools/call", `"skill_load"`, "skill_load", true},
		{"tools/call", `"skill_\u006coad"`, "skill_load", true},
		{"tools/call", `"skill_read"`, "skill_read", true},
		{"tools/call", `"skill_docs"`, "", false}, // a prompt, not a tool
		{"prompts/get", `"skill_docs"`, "skill_docs", true},
		{"prompts/get", `"skill_load"`, "", false},
		{"tools/call", `"echo"`, "", false},
		{"tools/call", `42`, "", false},
		{"tools/call", `"`, "", false},
		{"tools/call", ``, "", false},
		{"tools/call", `"skill_load\"`, "", false},
	}
	for _, tt := range tests {
		got, ok := c.ownName(tt.method, []byte(tt.raw))
		if got != tt.want || ok != tt.ok {
			t.Errorf("ownName(%s, %s) = %q, %v, want %q, %v", tt.method, tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzOwnName: ownName says a raw params.name is one of the sidecar's
// names exactly when it is a JSON string that decodes to that name.
func FuzzOwnName(f *testing.F) {
	for _, s := range []string{`"skill_load"`, `"skill_\u006coad"`, `"skill_docs"`, `"echo"`, `42`, `"`, ``, `"skill_load\"`, `"\ud800"`, ` "skill_load"`, `"skill_load" `, `"skill_docs0`} {
		f.Add(s, true)
		f.Add(s, false)
	}
	c := &compatView{loadName: "skill_load", readName: "skill_read", promptNames: []string{"skill_docs"}, promptIndex: map[string]int{"skill_docs": 0}}
	f.Fuzz(func(t *testing.T, raw string, tool bool) {
		method, names := "prompts/get", []string{"skill_docs"}
		if tool {
			method, names = "tools/call", []string{"skill_load", "skill_read"}
		}
		got, ok := c.ownName(method, []byte(raw))
		var s string
		// GetKey hands over a value without the whitespace around it.
		decoded := json.Unmarshal([]byte(raw), &s) == nil && raw == strings.TrimSpace(raw) && strings.HasPrefix(raw, `"`)
		want := decoded && slices.Contains(names, s)
		if ok != want || (ok && got != s) {
			t.Fatalf("ownName(%s, %q) = %q, %v; decoded %q (%v), want ok %v", method, raw, got, ok, s, decoded, want)
		}
	})
}
