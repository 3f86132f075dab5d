package skillssidecar_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The documents a reader follows: the front page, the contributor guide,
// the changelog, the chart's README and every page under docs/.
func readerDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, more...)
	if _, err := os.Stat("charts/skills-sidecar/README.md"); err == nil {
		docs = append(docs, "charts/skills-sidecar/README.md")
	}
	sort.Strings(docs)
	return docs
}

var (
	// mdLink matches an inline Markdown link's target: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// fence opens or closes a fenced code block, whose text is not Markdown.
	fence = regexp.MustCompile("^\\s*```")
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	// slugDrop is what GitHub leaves out of a heading's anchor.
	slugDrop = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// anchor is the id GitHub gives a heading: lower case, punctuation dropped,
// spaces turned into dashes.
func anchor(title string) string {
	s := strings.ToLower(slugDrop.ReplaceAllString(title, ""))
	return strings.ReplaceAll(s, " ", "-")
}

// scanDoc returns the link targets of a Markdown document outside code
// blocks and the anchors of its headings.
func scanDoc(text string) (links []string, anchors map[string]bool) {
	anchors = map[string]bool{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			anchors[anchor(m[1])] = true
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			links = append(links, m[1])
		}
	}
	return links, anchors
}

// brokenLinks returns the relative links of the document at path that do not
// resolve: a file that does not exist, or an anchor no heading of the target
// has. Links with a scheme (https:, mailto:) are not followed.
func brokenLinks(path string, read func(string) (string, error)) []string {
	text, err := read(path)
	if err != nil {
		return []string{path + ": " + err.Error()}
	}
	links, own := scanDoc(text)
	var bad []string
	for _, l := range links {
		if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
			continue
		}
		target, frag, _ := strings.Cut(l, "#")
		anchors := own
		if target != "" {
			file := filepath.Join(filepath.Dir(path), target)
			t, err := read(file)
			if err != nil {
				bad = append(bad, path+": "+l+" (no such file)")
				continue
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			_, anchors = scanDoc(t)
		}
		if frag != "" && !anchors[frag] {
			bad = append(bad, path+": "+l+" (no such heading)")
		}
	}
	return bad
}

func readFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", nil
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// TestDocLinksResolve: every relative link in the documents a reader follows
// leads to a file of the repository, and every #anchor to a heading there.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	for _, doc := range readerDocs(t) {
		for _, b := range brokenLinks(doc, readFile) {
			t.Error(b)
		}
	}
}

// TestBrokenLinksCanFail feeds the checker the two faults it exists for.
func TestBrokenLinksCanFail(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a.md": "# Top\n[ok](b.md#real-heading) [self](#top) [gone](missing.md) [bad](b.md#nope) [self-bad](#nowhere)\n```\n[in code](ignored.md)\n```\n",
		"b.md": "## Real heading\n",
	}
	read := func(p string) (string, error) {
		if s, ok := files[filepath.ToSlash(p)]; ok {
			return s, nil
		}
		return "", os.ErrNotExist
	}
	got := brokenLinks("a.md", read)
	want := []string{"a.md: missing.md (no such file)", "a.md: b.md#nope (no such heading)", "a.md: #nowhere (no such heading)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("brokenLinks = %q, want %q", got, want)
	}
}

// outsideRef matches what a reader of the repository cannot follow: the
// team's notes outside it, and numbers of a tracker it does not contain.
var outsideRef = regexp.MustCompile(`\b(PROTOCOL|DESIGN|STYLE)\.md\b|(^|[^/.])\.\./shared/|\b[Ii]ssues? #?[0-9]+\b`)

// outsideRefs returns "path:line: text" for each line of text that points
// outside the repository.
func outsideRefs(path, text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		if outsideRef.MatchString(line) {
			out = append(out, fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line)))
		}
	}
	return out
}

// TestNothingPointsOutside: code, scripts and documents explain themselves
// or point into the repository (docs/design.md, docs/protocol.md), never at
// notes outside it or at tracker numbers a reader cannot look up.
func TestNothingPointsOutside(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("git", "ls-files", "-z", "*.go", "*.sh", "*.md", "*.mjs", "*.yaml", "*.txt", "*.json", "Makefile", "Dockerfile").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if strings.Contains(f, "testdata/") || strings.HasSuffix(f, "package-lock.json") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range outsideRefs(f, string(b)) {
			t.Error(r)
		}
	}
}

func TestOutsideRefsCanFail(t *testing.T) {
	t.Parallel()
	// Spelled in pieces so that this file does not match itself.
	text := "// see PROTOCOL" + ".md §1\n// as iss" + "ue 17 asked\n# ../sha" + "red/notes.md\nlink: \"../../sha" + "red/glossary.md\"\n// fine: docs/protocol.md\n"
	got := outsideRefs("x.go", text)
	if len(got) != 3 || !strings.HasPrefix(got[0], "x.go:1:") || !strings.HasPrefix(got[1], "x.go:2:") || !strings.HasPrefix(got[2], "x.go:3:") {
		t.Errorf("outsideRefs = %q, want lines 1, 2 and 3 only", got)
	}
}
