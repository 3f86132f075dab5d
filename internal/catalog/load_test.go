package catalog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

func skip(path, kind, reason string) catalog.Problem {
	return catalog.Problem{Path: path, Kind: kind, Reason: reason, Severity: catalog.SeveritySkip}
}

func warn(path, kind, reason string) catalog.Problem {
	return catalog.Problem{Path: path, Kind: kind, Reason: reason, Severity: catalog.SeverityWarn}
}

// TestLoadBrokenFixture asserts every skip and warn reason of the broken
// fixture, one bad item per rule, and that the good items still load.
func TestLoadBrokenFixture(t *testing.T) {
	t.Parallel()
	s, err := catalog.Load(filepath.Join("testdata", "plugins", "broken"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.Problem{
		skip("agents/blank-description.md", "description", "description is empty"),
		skip("agents/cp1252.md", "encoding", "file is not valid UTF-8"),
		skip("agents/dup-b.md", "duplicate", `agent name "dup" is already taken by agents/dup-a.md, which comes first in file-name order`),
		skip("agents/empty-frontmatter.md", "frontmatter", "frontmatter is not a non-empty mapping"),
		warn("agents/good.md", "reference", `skill "missing-skill" is not served by this plugin`),
		skip("agents/list-frontmatter.md", "frontmatter", "frontmatter is not a non-empty mapping"),
		skip("agents/name-at.md", "name", `name "agent@team" contains '@'`),
		skip("agents/name-invisible.md", "name", `name "zero\u200bwidth" contains a control, invisible or unassigned character U+200B`),
		skip("agents/name-number.md", "name", "name is a number, not a string"),
		skip("agents/name-slash.md", "name", `name "team/agent" contains '/'`),
		skip("agents/name-space.md", "name", "name \"two words\" contains whitespace U+0020"),
		skip("agents/no-description.md", "description", "frontmatter has no description"),
		skip("agents/no-frontmatter.md", "frontmatter", `file has no YAML frontmatter (a first line "---")`),
		skip("agents/not-json.md", "frontmatter", "frontmatter is not representable as JSON: line 2: anchor &n is not allowed"),
		skip("agents/unterminated.md", "frontmatter", `YAML frontmatter is not closed by a "---" line`),
		skip("skills/Bad_Name/SKILL.md", "name", `name "Bad_Name" is not 1-64 lowercase letters, digits and single hyphens (^[a-z0-9]+(-[a-z0-9]+)*$)`),
		skip("skills/SKILL.md", "path", "SKILL.md directly under skills/ has no skill path; put it in a folder named after the skill"),
		skip("skills/bad folder name", "path", "folder name has the character U+0020 ' ', which a skill:// URI cannot hold unescaped"),
		skip("skills/bad-yaml/SKILL.md", "frontmatter", "frontmatter is not valid YAML: line 2: mapping values are not allowed in this context"),
		skip("skills/compatibility-map/SKILL.md", "compatibility", "compatibility is a mapping, not a string"),
		skip("skills/compatibility-number/SKILL.md", "compatibility", "compatibility is a number, not a string"),
		skip("skills/description-list/SKILL.md", "description", "description is a list, not a string"),
		skip("skills/empty-description/SKILL.md", "description", "description is empty"),
		skip("skills/latin1/SKILL.md", "encoding", "SKILL.md is not valid UTF-8"),
		skip("skills/list-frontmatter/SKILL.md", "frontmatter", "frontmatter is not a mapping"),
		skip("skills/long-compatibility/SKILL.md", "compatibility", "compatibility is 501 characters; at most 500 are allowed"),
		skip("skills/long-description/SKILL.md", "description", "description is 1025 characters; at most 1024 are allowed"),
		skip("skills/merge-key/SKILL.md", "frontmatter", `frontmatter is not representable as JSON: line 3: merge key "<<" is not allowed`),
		skip("skills/metadata-list/SKILL.md", "metadata", "metadata is a list, not a map of strings"),
		skip("skills/metadata-number/SKILL.md", "metadata", `metadata key "priority" is a number, not a string`),
		skip("skills/missing-name/SKILL.md", "name", "frontmatter has no name"),
		skip("skills/name-number/SKILL.md", "name", "name is a number, not a string"),
		skip("skills/no-description/SKILL.md", "description", "frontmatter has no description"),
		skip("skills/no-frontmatter/SKILL.md", "frontmatter", `file has no YAML frontmatter (a first line "---")`),
		warn("skills/reserved-metadata/SKILL.md", "metadata", `metadata key "io.modelcontextprotocol/owner" uses the prefix "io.modelcontextprotocol/" reserved for MCP`),
		skip("skills/unterminated/SKILL.md", "frontmatter", `YAML frontmatter is not closed by a "---" line`),
		skip("skills/wrong-folder/SKILL.md", "name", `name "other-name" does not equal the skill folder name "wrong-folder"`),
	}
	if diff := cmp.Diff(want, s.Problems()); diff != "" {
		t.Errorf("Problems() mismatch (-want +got):\n%s", diff)
	}
	if got, want := skillURIs(s), []string{"skill://good/SKILL.md", "skill://reserved-metadata/SKILL.md"}; !cmp.Equal(got, want) {
		t.Errorf("Skills() = %v, want %v", got, want)
	}
	good, _ := s.Skill("skill://good/SKILL.md")
	if got := fileURIs(good.Files); !cmp.Equal(got, []string{"skill://good/SKILL.md"}) {
		t.Errorf("good skill files = %v, want only SKILL.md (dot-files are not part of a skill)", got)
	}
	var agents []string
	for _, a := range s.Agents() {
		agents = append(agents, a.Name+"="+a.File)
	}
	if want := []string{"dup=agents/dup-a.md", "good=agents/good.md"}; !cmp.Equal(agents, want) {
		t.Errorf("Agents() = %v, want %v", agents, want)
	}
	if got := s.Skipped(); got != len(want)-2 {
		t.Errorf("Skipped() = %d, want %d", got, len(want)-2)
	}
}

func skillURIs(s *catalog.Snapshot) []string {
	var out []string
	for _, sk := range s.Skills() {
		out = append(out, sk.URI)
	}
	return out
}

func fileURIs(files []*catalog.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.URI)
	}
	return out
}

// TestLoadExample checks the embedded example plugin in full: it is what
// users see first and what the demo serves.
func TestLoadExample(t *testing.T) {
	t.Parallel()
	s, err := catalog.LoadFS(examples.Plugin(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems()) != 0 {
		t.Fatalf("example plugin has problems: %v", s.Problems())
	}
	if got, want := s.Plugin(), (catalog.PluginInfo{Present: true, Name: "acme-support", Version: "1.0.0",
		Description: "Skills and agents for Acme's customer-support desk: refund handling and incident summaries."}); got != want {
		t.Errorf("Plugin() = %+v, want %+v", got, want)
	}
	if got, want := skillURIs(s), []string{"skill://acme/billing/refunds/SKILL.md", "skill://incident-summary/SKILL.md"}; !cmp.Equal(got, want) {
		t.Fatalf("Skills() = %v, want %v", got, want)
	}
	refunds, ok := s.Skill("skill://acme/billing/refunds/SKILL.md")
	if !ok {
		t.Fatal("refunds skill missing")
	}
	wantFiles := []string{
		"skill://acme/billing/refunds/SKILL.md",
		"skill://acme/billing/refunds/assets/refund-flow.png",
		"skill://acme/billing/refunds/examples/duplicate-charge.md",
		"skill://acme/billing/refunds/examples/partial-refund.md",
		"skill://acme/billing/refunds/scripts/refund_amount.py",
	}
	if diff := cmp.Diff(wantFiles, fileURIs(refunds.Files)); diff != "" {
		t.Errorf("refunds manifest (-want +got):\n%s", diff)
	}
	if refunds.Path != "acme/billing/refunds" || refunds.Root != "skill://acme/billing/refunds" || refunds.Name != "refunds" {
		t.Errorf("refunds = path %q root %q name %q", refunds.Path, refunds.Root, refunds.Name)
	}
	for _, f := range refunds.Files {
		sum := sha256.Sum256(f.Data)
		if want := "sha256:" + hex.EncodeToString(sum[:]); f.Digest != want || f.Size != int64(len(f.Data)) {
			t.Errorf("%s digest %s size %d, want %s %d", f.URI, f.Digest, f.Size, want, len(f.Data))
		}
		if byURI, _ := s.File(f.URI); byURI != f {
			t.Errorf("File(%q) is not the manifest's file", f.URI)
		}
	}
	types := map[string]string{}
	for _, f := range refunds.Files {
		kind := "blob"
		if f.Text {
			kind = "text"
		}
		types[f.URI[strings.LastIndexByte(f.URI, '/')+1:]] = f.MIMEType + " " + kind
	}
	wantTypes := map[string]string{
		"SKILL.md": "text/markdown text", "refund-flow.png": "image/png blob",
		"duplicate-charge.md": "text/markdown text", "partial-refund.md": "text/markdown text",
		"refund_amount.py": "text/x-python text",
	}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if d, ok := s.Dir("skill://acme/billing"); ok {
		t.Errorf("Dir above a skill root = %+v, want none", d)
	}
	root, ok := s.Dir("skill://acme/billing/refunds")
	if !ok {
		t.Fatal("Dir(skill root) missing")
	}
	wantRoot := []catalog.DirEntry{
		{Name: "SKILL.md", URI: "skill://acme/billing/refunds/SKILL.md", MIMEType: "text/markdown", Size: refunds.Files[0].Size},
		{Name: "assets", URI: "skill://acme/billing/refunds/assets", IsDir: true, MIMEType: "inode/directory"},
		{Name: "examples", URI: "skill://acme/billing/refunds/examples", IsDir: true, MIMEType: "inode/directory"},
		{Name: "scripts", URI: "skill://acme/billing/refunds/scripts", IsDir: true, MIMEType: "inode/directory"},
	}
	if diff := cmp.Diff(wantRoot, root.Entries); diff != "" {
		t.Errorf("Dir(root) entries (-want +got):\n%s", diff)
	}
	if ex, ok := s.Dir("skill://acme/billing/refunds/examples"); !ok || len(ex.Entries) != 2 {
		t.Errorf("Dir(examples) = %+v, %v; want two files", ex, ok)
	}
	for _, bad := range []string{"skill://acme/billing/refunds/", "skill://acme/billing/refunds/SKILL.md", "skill://nope"} {
		if _, ok := s.Dir(bad); ok {
			t.Errorf("Dir(%q) found, want not found", bad)
		}
	}

	wantAgents := []*catalog.Agent{
		{
			Name:         "billing-triage",
			Description:  "Triage incoming billing tickets: classify them, resolve refund requests that policy covers, and hand everything else to a human with a clear note.",
			Capabilities: []string{"billing", "refunds", "ticket-triage"},
			Model:        "sonnet", ModelRole: "medium",
			Tools:  []string{"lookup_invoice", "issue_refund"},
			Skills: []catalog.AgentSkill{{Name: "refunds", URI: "skill://acme/billing/refunds/SKILL.md"}},
			File:   "agents/billing-triage.md", HasInstructions: true,
		},
		{
			Name:         "incident-scribe",
			Description:  "Writes blameless incident summaries from timelines and chat logs for customers and leadership.",
			Capabilities: []string{"incident-communication", "writing"},
			Model:        "claude-haiku-4-5", ModelRole: "small",
			Tools:  []string{},
			Skills: []catalog.AgentSkill{{Name: "incident-summary", URI: "skill://incident-summary/SKILL.md"}},
			File:   "agents/incident-scribe.md", HasInstructions: true,
		},
	}
	if diff := cmp.Diff(wantAgents, s.Agents(), cmpopts.IgnoreFields(catalog.Agent{}, "Instructions", "Frontmatter")); diff != "" {
		t.Errorf("Agents() (-want +got):\n%s", diff)
	}

	// Load from disk and LoadFS from the embedded copy share one code path
	// and must agree byte for byte.
	disk, err := catalog.Load(filepath.Join("..", "..", "examples", "plugin"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Skills(), disk.Skills()); diff != "" {
		t.Errorf("Load(disk) and LoadFS(embedded) differ (-embedded +disk):\n%s", diff)
	}
}

// TestNestedSkills: a nested skill is its own skill, and its files also
// belong to the enclosing skill's manifest.
func TestNestedSkills(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"skills/outer/SKILL.md":            "---\nname: outer\ndescription: Outer.\n---\n",
		"skills/outer/ref.md":              "ref\n",
		"skills/outer/inner/SKILL.md":      "---\nname: inner\ndescription: Inner.\n---\n",
		"skills/outer/inner/data.json":     "{}\n",
		"skills/outer/inner/bin/tool.bin":  "\x00\x01\xff",
		"skills/outer-sibling/SKILL.md":    "---\nname: outer-sibling\ndescription: Shares a prefix.\n---\n",
		"skills/outer-sibling/nothing.txt": "x",
	})
	s, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	outer, _ := s.Skill("skill://outer/SKILL.md")
	inner, _ := s.Skill("skill://outer/inner/SKILL.md")
	if outer == nil || inner == nil {
		t.Fatalf("skills = %v, problems %v", skillURIs(s), s.Problems())
	}
	wantOuter := []string{"skill://outer/SKILL.md", "skill://outer/inner/SKILL.md", "skill://outer/inner/bin/tool.bin", "skill://outer/inner/data.json", "skill://outer/ref.md"}
	if diff := cmp.Diff(wantOuter, fileURIs(outer.Files)); diff != "" {
		t.Errorf("outer manifest (-want +got):\n%s", diff)
	}
	wantInner := []string{"skill://outer/inner/SKILL.md", "skill://outer/inner/bin/tool.bin", "skill://outer/inner/data.json"}
	if diff := cmp.Diff(wantInner, fileURIs(inner.Files)); diff != "" {
		t.Errorf("inner manifest (-want +got):\n%s", diff)
	}
	if outer.Files[1] != inner.Files[0] {
		t.Error("a file shared by two manifests is read twice; want one *File")
	}
	if f, _ := s.File("skill://outer/inner/bin/tool.bin"); f == nil || f.Text || f.MIMEType != "application/octet-stream" {
		t.Errorf("tool.bin = %+v, want a blob", f)
	}
}

// TestLimits covers the per-skill file and byte limits in both modes.
func TestLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"skills/many/SKILL.md": "---\nname: many\ndescription: Four files.\n---\n",
		"skills/many/a.txt":    "a", "skills/many/b.txt": "b", "skills/many/c.txt": "c",
		"skills/big/SKILL.md": "---\nname: big\ndescription: One big file.\n---\n",
		"skills/big/big.txt":  strings.Repeat("x", 200),
	})
	tests := map[string]struct {
		opts       catalog.Options
		wantSkills []string
		want       []catalog.Problem
	}{
		"skip": {
			opts:       catalog.Options{MaxFiles: 3, MaxSkillBytes: 150},
			wantSkills: nil,
			want: []catalog.Problem{
				skip("skills/big", "limits", "skill has 245 bytes, over the limit of 150"),
				skip("skills/many", "limits", "skill has 4 files, over the limit of 3"),
			},
		},
		"warn": {
			opts:       catalog.Options{MaxFiles: 3, MaxSkillBytes: 150, LimitMode: catalog.LimitWarn},
			wantSkills: []string{"skill://big/SKILL.md", "skill://many/SKILL.md"},
			want: []catalog.Problem{
				warn("skills/big", "limits", "skill has 245 bytes, over the limit of 150"),
				skip("skills/big/big.txt", "limits", "file is 200 bytes, over the 150-byte skill limit"),
				warn("skills/many", "limits", "skill has 4 files, over the limit of 3"),
			},
		},
		"within": {
			opts:       catalog.Options{},
			wantSkills: []string{"skill://big/SKILL.md", "skill://many/SKILL.md"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := catalog.Load(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Problems(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Problems() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkills, skillURIs(s)); diff != "" {
				t.Errorf("Skills() (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := catalog.Load(dir, catalog.Options{LimitMode: "maybe"}); err == nil {
		t.Error("Load with limit mode \"maybe\" succeeded, want an error")
	}
}

// TestSymlinksAndSpecialFiles: links resolving inside the root are followed;
// escaping, absolute, dangling and looping links, FIFOs and sockets are
// refused with a reason, and the rest of the skill loads.
func TestSymlinksAndSpecialFiles(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "secret"})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"common/glossary.md":   "# Glossary\n",
		"common/tables/a.csv":  "a,b\n",
		"skills/s/SKILL.md":    "---\nname: s\ndescription: Links.\n---\n",
		"skills/s/regular.txt": "regular",
		"agents/real.md":       "---\nname: real\ndescription: Linked agent.\n---\n",
		"skills/t/skill.txt":   "---\nname: t\ndescription: Linked SKILL.md.\n---\n",
	})
	links := map[string]string{
		"skills/s/glossary.md":      "../../common/glossary.md", // inside: followed
		"skills/s/tables":           "../../common/tables",      // directory inside: followed
		"skills/s/escape.txt":       "../../../" + filepath.Base(outside) + "/secret.txt",
		"skills/s/absolute.txt":     filepath.Join(outside, "secret.txt"),
		"skills/s/dangling.txt":     "nowhere.txt",
		"skills/s/loop":             ".",
		"skills/s/self.txt":         "self.txt",
		"agents/linked.md":          "real.md",
		"agents/escape.md":          "../../" + filepath.Base(outside) + "/secret.txt",
		"skills/t/SKILL.md":         "skill.txt", // a link is a fine SKILL.md
		"skills/s/up-and-back.txt":  "../s/regular.txt",
		"skills/s/through-link.txt": "tables/a.csv",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "skills/s/pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "skills/s/sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	s, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.Problem{
		skip("agents/escape.md", "symlink", "symbolic link points outside the plugin root"),
		skip("agents/real.md", "duplicate", `agent name "real" is already taken by agents/linked.md, which comes first in file-name order`),
		skip("skills/s/absolute.txt", "symlink", `symbolic link target "`+filepath.Join(outside, "secret.txt")+`" is absolute; only links inside the plugin root are followed`),
		skip("skills/s/dangling.txt", "symlink", "symbolic link target does not exist"),
		skip("skills/s/escape.txt", "symlink", "symbolic link points outside the plugin root"),
		skip("skills/s/loop", "symlink", "symbolic link loops back to a folder that contains it"),
		skip("skills/s/pipe", "special", "a named pipe (FIFO), not a regular file"),
		skip("skills/s/self.txt", "symlink", "too many levels of symbolic links (a loop)"),
		skip("skills/s/sock", "special", "a socket, not a regular file"),
	}
	if diff := cmp.Diff(want, s.Problems()); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
	sk, _ := s.Skill("skill://s/SKILL.md")
	if sk == nil {
		t.Fatalf("skill s not served; skills %v", skillURIs(s))
	}
	wantFiles := []string{"skill://s/SKILL.md", "skill://s/glossary.md", "skill://s/regular.txt", "skill://s/tables/a.csv", "skill://s/through-link.txt", "skill://s/up-and-back.txt"}
	if diff := cmp.Diff(wantFiles, fileURIs(sk.Files)); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	if f, _ := s.File("skill://s/glossary.md"); f == nil || string(f.Data) != "# Glossary\n" {
		t.Errorf("linked file = %+v", f)
	}
	if _, ok := s.Skill("skill://t/SKILL.md"); !ok {
		t.Error("a SKILL.md that is a link inside the root is not served")
	}
	if _, ok := s.Agent("real"); !ok {
		t.Error("agent real missing")
	}
	for _, sk := range s.Skills() {
		for _, f := range sk.Files {
			if strings.Contains(string(f.Data), "secret") {
				t.Errorf("%s serves a file from outside the root", f.URI)
			}
		}
	}
}

// TestDuplicateAgentViaLink: a link to an agent file is a second file with
// the same name; the first in file-name order wins.
func TestDuplicateAgentViaLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agents/b.md": "---\nname: b\ndescription: B.\n---\n"})
	if err := os.Symlink("b.md", filepath.Join(dir, "agents/a.md")); err != nil {
		t.Fatal(err)
	}
	s, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.Problem{skip("agents/b.md", "duplicate", `agent name "b" is already taken by agents/a.md, which comes first in file-name order`)}
	if diff := cmp.Diff(want, s.Problems()); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
}

// TestConfigMapLayout loads a Kubernetes ConfigMap-style symlink farm.
func TestConfigMapLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeConfigMap(t, dir, "..2025_01_01_00_00_00.1", map[string]string{
		"skills/hello/SKILL.md": "---\nname: hello\ndescription: Hello.\n---\n",
		"agents/greeter.md":     "---\nname: greeter\ndescription: Greets.\nskills: [hello]\n---\nSay hello.\n",
	})
	s, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems()) != 0 {
		t.Errorf("Problems() = %v, want none (dot-folders of the farm are not skills)", s.Problems())
	}
	if got := skillURIs(s); !cmp.Equal(got, []string{"skill://hello/SKILL.md"}) {
		t.Errorf("Skills() = %v", got)
	}
	if a, ok := s.Agent("greeter"); !ok || len(a.Skills) != 1 {
		t.Errorf("Agent(greeter) = %+v, %v", a, ok)
	}
}

// TestUnreadable: a folder that cannot be read at all is an error wrapping
// ErrUnreadable, so a watcher keeps its last snapshot.
func TestUnreadable(t *testing.T) {
	t.Parallel()
	dangling := t.TempDir()
	if err := os.Symlink("..data/skills", filepath.Join(dangling, "skills")); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	writeFiles(t, filepath.Dir(notDir), map[string]string{"file": "x"})
	tests := map[string]string{
		"missing root":     filepath.Join(t.TempDir(), "missing"),
		"root is a file":   notDir,
		"dangling skills/": dangling,
	}
	for name, root := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := catalog.Load(root, catalog.Options{})
			if !errors.Is(err, catalog.ErrUnreadable) {
				t.Errorf("Load(%s) = %v, %v; want ErrUnreadable", name, s, err)
			}
		})
	}
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// makeConfigMap lays files out the way the kubelet's atomic writer does:
// the data in a timestamped folder, "..data" linking to it, and one link
// through "..data" per top-level name (skills/, agents/; both are linked, as
// later swaps in these tests add what the first version lacks).
func makeConfigMap(t testing.TB, dir, stamp string, files map[string]string) {
	t.Helper()
	writeFiles(t, filepath.Join(dir, stamp), files)
	for _, top := range []string{"skills", "agents"} {
		if err := os.MkdirAll(filepath.Join(dir, stamp, top), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(stamp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"skills", "agents"} {
		if err := os.Symlink(filepath.Join("..data", top), filepath.Join(dir, top)); err != nil {
			t.Fatal(err)
		}
	}
}

// swapConfigMap replaces the data the way the kubelet does: write the new
// timestamped folder, point "..data_tmp" at it, rename it over "..data".
func swapConfigMap(t testing.TB, dir, stamp string, files map[string]string) {
	t.Helper()
	writeFiles(t, filepath.Join(dir, stamp), files)
	for _, top := range []string{"skills", "agents"} {
		if err := os.MkdirAll(filepath.Join(dir, stamp, top), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(stamp, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}
