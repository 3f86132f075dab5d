package catalog_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// portablePlugin has one skill YAML 1.1 hosts read differently (a plain
// yes), one they read alike (the same value quoted, and a bare date), and
// an agent with a plain yes: agents are published as JSON, never re-read
// from YAML by a host, so the rule is not theirs.
var portablePlugin = map[string]string{
	"skills/ambiguous/SKILL.md": "---\nname: ambiguous\ndescription: Reads yes.\nmetadata:\n  beta: yes\n---\n",
	"skills/quoted/SKILL.md":    "---\nname: quoted\ndescription: Reads \"yes\".\ncreated: 2025-06-02\nmetadata:\n  beta: \"yes\"\n---\n",
	"agents/a.md":               "---\nname: a\ndescription: An agent.\nbeta: yes\n---\n",
}

const ambiguousReason = `frontmatter that YAML 1.1 hosts read differently: line 5: metadata.beta: yes is the string "yes" in YAML 1.2 but the boolean true in YAML 1.1 (PyYAML); quote it: beta: "yes"`

// TestFrontmatterPortability: by default a skill with an ambiguous plain
// scalar is skipped with a frontmatter reason naming the key and the fix;
// with PortabilityWarn it is served, warned, with the same reason.
func TestFrontmatterPortability(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, portablePlugin)
	tests := map[string]struct {
		mode       string
		wantSkills []string
		wantProbs  []catalog.Problem
	}{
		"default skips": {"", []string{"skill://quoted/SKILL.md"}, []catalog.Problem{
			{Path: "skills/ambiguous/SKILL.md", Kind: "frontmatter", Severity: "skip", Reason: ambiguousReason, Ambiguous: true}}},
		"skip": {catalog.PortabilitySkip, []string{"skill://quoted/SKILL.md"}, []catalog.Problem{
			{Path: "skills/ambiguous/SKILL.md", Kind: "frontmatter", Severity: "skip", Reason: ambiguousReason, Ambiguous: true}}},
		"warn serves": {catalog.PortabilityWarn, []string{"skill://ambiguous/SKILL.md", "skill://quoted/SKILL.md"}, []catalog.Problem{
			{Path: "skills/ambiguous/SKILL.md", Kind: "frontmatter", Severity: "warn", Reason: ambiguousReason, Ambiguous: true}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := catalog.Load(dir, catalog.Options{FrontmatterPortability: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSkills, skillURIs(s)); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProbs, s.Problems()); diff != "" {
				t.Errorf("Problems() (-want +got):\n%s", diff)
			}
			if _, ok := s.Agent("a"); !ok {
				t.Errorf("agent a not served: %v", s.Problems())
			}
			if sk, ok := s.Skill("skill://ambiguous/SKILL.md"); ok && string(sk.Frontmatter) != `{"name":"ambiguous","description":"Reads yes.","metadata":{"beta":"yes"}}` {
				t.Errorf("served frontmatter = %s, want the YAML 1.2 reading", sk.Frontmatter)
			}
		})
	}
	if err := (catalog.Options{FrontmatterPortability: "serve"}).Validate(); err == nil {
		t.Error(`Validate(FrontmatterPortability "serve") = nil, want an error`)
	}
}
