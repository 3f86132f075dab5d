package catalog_test

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

func skillMD(name, desc string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\nbody\n")}
}

func agentMD(name, desc string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\nDo it.\n")}
}

// base is the plugin every Diff case edits one thing of.
func base() fstest.MapFS {
	return fstest.MapFS{
		"skills/a/SKILL.md":          skillMD("a", "first"),
		"skills/a/notes.txt":         {Data: []byte("notes")},
		"skills/b/SKILL.md":          skillMD("b", "second"),
		"agents/triage.md":           agentMD("triage", "sorts"),
		".claude-plugin/plugin.json": {Data: []byte(`{"name":"p"}`)},
	}
}

func load(t *testing.T, fsys fstest.MapFS) *catalog.Snapshot {
	t.Helper()
	s, err := catalog.LoadFS(fsys, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDiff: each edit a client can see is reported as the notifications it
// calls for, and an edit no served method shows is no change at all.
func TestDiff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(fstest.MapFS)
		want catalog.Changes
	}{
		{"nothing", func(fstest.MapFS) {}, catalog.Changes{}},
		{"plugin.json only", func(m fstest.MapFS) { m[".claude-plugin/plugin.json"] = &fstest.MapFile{Data: []byte(`{"name":"q"}`)} },
			catalog.Changes{}},
		{"a file's bytes", func(m fstest.MapFS) { m["skills/a/notes.txt"] = &fstest.MapFile{Data: []byte("notes v2")} },
			catalog.Changes{Skills: true, Files: []string{"skill://a/notes.txt"}}},
		{"a description", func(m fstest.MapFS) { m["skills/b/SKILL.md"] = skillMD("b", "changed") },
			catalog.Changes{Skills: true, Files: []string{"skill://b/SKILL.md"}}},
		{"a skill added", func(m fstest.MapFS) { m["skills/c/SKILL.md"] = skillMD("c", "third") },
			catalog.Changes{Skills: true, Files: []string{"skill://c/SKILL.md"}}},
		{"a skill removed", func(m fstest.MapFS) { delete(m, "skills/b/SKILL.md") },
			catalog.Changes{Skills: true, Files: []string{"skill://b/SKILL.md"}}},
		{"a file removed", func(m fstest.MapFS) { delete(m, "skills/a/notes.txt") },
			catalog.Changes{Skills: true, Files: []string{"skill://a/notes.txt"}}},
		{"an agent changed", func(m fstest.MapFS) { m["agents/triage.md"] = agentMD("triage", "sorts faster") },
			catalog.Changes{Agents: true}},
		{"an agent added", func(m fstest.MapFS) { m["agents/review.md"] = agentMD("review", "reviews") },
			catalog.Changes{Agents: true}},
		{"an agent removed", func(m fstest.MapFS) { delete(m, "agents/triage.md") },
			catalog.Changes{Agents: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prev := load(t, base())
			m := base()
			tc.edit(m)
			next := load(t, m)
			got := catalog.Diff(prev, next)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
			if got.Any() != (tc.want.Skills || tc.want.Agents || len(tc.want.Files) > 0) {
				t.Errorf("Any() = %v for %+v", got.Any(), got)
			}
		})
	}
}

// TestDiffNil: a nil snapshot is the empty catalog on either side.
func TestDiffNil(t *testing.T) {
	t.Parallel()
	s := load(t, base())
	if c := catalog.Diff(nil, nil); c.Any() {
		t.Errorf("Diff(nil, nil) = %+v, want nothing", c)
	}
	want := catalog.Changes{Skills: true, Agents: true, Files: []string{"skill://a/SKILL.md", "skill://a/notes.txt", "skill://b/SKILL.md"}}
	if diff := cmp.Diff(want, catalog.Diff(nil, s)); diff != "" {
		t.Errorf("Diff(nil, s) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, catalog.Diff(s, nil)); diff != "" {
		t.Errorf("Diff(s, nil) (-want +got):\n%s", diff)
	}
}
