package methods

import (
	"fmt"
	"regexp"
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
