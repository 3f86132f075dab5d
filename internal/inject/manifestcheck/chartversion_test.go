package manifestcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateVersions = flag.Bool("update", false, "record the chart's digest for its current version in testdata/chart-versions.txt")

const versionsFile = "testdata/chart-versions.txt"

// chartDigest hashes what a release of the chart is made of: every file of
// charts/skills-sidecar but the ci matrices, with Chart.yaml's version line
// left out (it is what changes with a bump).
func chartDigest(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	var files []string
	err := filepath.WalkDir(chartDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "ci" || d.Name() == "ci-invalid") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(p) == "Chart.yaml" {
			b = regexp.MustCompile(`(?m)^version:.*$`).ReplaceAll(b, nil)
		}
		rel, _ := filepath.Rel(chartDir, p)
		h.Write([]byte(filepath.ToSlash(rel) + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// chartVersion is Chart.yaml's version.
func chartVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(chartDir + "Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version:\s*"?([^"\s]+)"?\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Chart.yaml has no version")
	}
	return string(m[1])
}

// unreleasedNames reports whether the CHANGELOG's Unreleased section names
// chart version v ("chart 0.2.0").
func unreleasedNames(t *testing.T, v string) bool {
	t.Helper()
	b, err := os.ReadFile("../../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(unreleasedSection(string(b)), "chart "+v)
}

// unreleasedSection is the CHANGELOG's Unreleased section.
func unreleasedSection(changelog string) string {
	_, rest, _ := strings.Cut(changelog, "\n## [Unreleased]")
	unreleased, _, _ := strings.Cut(rest, "\n## ")
	return unreleased
}

// TestChartVersionRecorded: a change of the chart's values or templates
// comes with a new chart version. Every version is recorded with the digest
// of the chart it was; the current version's digest must be the chart's.
// -update records it, but changes a recorded digest only for the newest
// version, and only while the CHANGELOG's Unreleased section names it: a
// version once released keeps its bytes.
func TestChartVersionRecorded(t *testing.T) {
	v, digest := chartVersion(t), chartDigest(t)
	b, err := os.ReadFile(versionsFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines [][2]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 2 && !strings.HasPrefix(l, "#") {
			lines = append(lines, [2]string{f[0], f[1]})
		}
	}
	i := slices.IndexFunc(lines, func(l [2]string) bool { return l[0] == v })
	newest := i >= 0 && i == len(lines)-1
	switch {
	case i >= 0 && lines[i][1] == digest:
		return
	case i >= 0 && !newest:
		t.Fatalf("chart version %s is recorded with another chart, and a newer version exists: set Chart.yaml's version past %s", v, lines[len(lines)-1][0])
	case !unreleasedNames(t, v):
		t.Fatalf("charts/skills-sidecar differs from the chart recorded for version %s (or %s is not recorded): bump Chart.yaml's version if %s was released, name \"chart %s\" in the CHANGELOG's Unreleased section, and run go test ./internal/inject/manifestcheck -run TestChartVersionRecorded -update", v, v, v, v)
	case !*updateVersions:
		t.Fatalf("charts/skills-sidecar differs from the chart recorded for version %s: run go test ./internal/inject/manifestcheck -run TestChartVersionRecorded -update", v)
	}
	if newest {
		lines[i][1] = digest
	} else {
		lines = append(lines, [2]string{v, digest})
	}
	out := "# Chart versions and the digest of the chart each one is (TestChartVersionRecorded).\n"
	for _, l := range lines {
		out += l[0] + " " + l[1] + "\n"
	}
	if err := os.WriteFile(versionsFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
