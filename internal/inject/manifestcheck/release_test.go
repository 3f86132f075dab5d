package manifestcheck

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// releaseHeading is the newest dated release of CHANGELOG.md
	// ("## [0.2.0] - 2026-12-02"); Unreleased has no date.
	releaseHeading = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`)
	// binaryVersion is the version an unstamped build reports.
	binaryVersion = regexp.MustCompile(`(?m)^\s*version\s*=\s*"([^"]*)"`)
)

// versionsDisagree returns what does not carry the release version: the
// chart's version, its appVersion (the image the injector injects), the
// binary's own version when unstamped, and the newest dated release of the
// changelog must all be one version. The chart's version alone may be
// newer, for a chart fix between releases that the Unreleased section
// names ("chart 0.3.1"): the chart's version changes with every change of
// its files (TestChartVersionRecorded).
func versionsDisagree(chartVersion, appVersion, changelog, runGo string) []string {
	var bad []string
	rel := releaseHeading.FindStringSubmatch(changelog)
	bin := binaryVersion.FindStringSubmatch(runGo)
	if rel == nil {
		return []string{"CHANGELOG.md has no dated release heading"}
	}
	chartFix := newerVersion(chartVersion, rel[1]) && strings.Contains(unreleasedSection(changelog), "chart "+chartVersion)
	if chartVersion != rel[1] && !chartFix {
		bad = append(bad, "Chart.yaml version "+chartVersion+" is not the newest release "+rel[1]+", nor a newer chart version the Unreleased section names")
	}
	if appVersion != rel[1] {
		bad = append(bad, "Chart.yaml appVersion "+appVersion+" is not the newest release "+rel[1])
	}
	if bin == nil || bin[1] != rel[1] {
		bad = append(bad, "cmd/skills-sidecar/run.go's version is not the newest release "+rel[1])
	}
	return bad
}

// newerVersion reports whether version a (X.Y.Z) comes after b.
func newerVersion(a, b string) bool {
	var x, y [3]int
	if n, _ := fmt.Sscanf(a, "%d.%d.%d", &x[0], &x[1], &x[2]); n != 3 {
		return false
	}
	if n, _ := fmt.Sscanf(b, "%d.%d.%d", &y[0], &y[1], &y[2]); n != 3 {
		return false
	}
	return slices.Compare(x[:], y[:]) > 0
}

// TestOneReleaseVersion: the chart, the image it injects, the binary and
// the changelog name one release, so a user reading any of them knows
// which notes apply.
func TestOneReleaseVersion(t *testing.T) {
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, chartDir+"Chart.yaml", &chart)
	changelog, err := os.ReadFile("../../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	runGo, err := os.ReadFile("../../../cmd/skills-sidecar/run.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range versionsDisagree(chart.Version, chart.AppVersion, string(changelog), string(runGo)) {
		t.Error(b)
	}
	docker, err := os.ReadFile("../../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	args := regexp.MustCompile(`(?m)^ARG VERSION=(.*)$`).FindAllStringSubmatch(string(docker), -1)
	if len(args) == 0 {
		t.Error("Dockerfile has no ARG VERSION default")
	}
	for _, a := range args {
		if a[1] != chart.AppVersion {
			t.Errorf("Dockerfile ARG VERSION=%s, want the release %s", a[1], chart.AppVersion)
		}
	}
}

func TestVersionsDisagreeCanFail(t *testing.T) {
	log := "# Changelog\n\n## [Unreleased]\n\n## [0.3.0] - 2027-01-01\n\n## [0.2.0] - 2026-12-02\n"
	if got := versionsDisagree("0.3.0", "0.3.0", log, "var (\n\tversion = \"0.3.0\"\n)"); len(got) != 0 {
		t.Errorf("agreeing versions reported %q", got)
	}
	if got := versionsDisagree("0.3.0", "0.2.0", log, "\tversion = \"0.2.0\""); len(got) != 2 {
		t.Errorf("appVersion and binary behind the release: reported %q, want 2 problems", got)
	}
	if got := versionsDisagree("0.3.0", "0.3.0", "## [Unreleased]\n", ""); len(got) != 1 {
		t.Errorf("no dated release: reported %q", got)
	}
	// A chart fix between releases: the chart's own version moves on,
	// named in the Unreleased section; the image and the binary stay.
	fix := strings.Replace(log, "## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n- A fix (chart 0.3.1).\n", 1)
	if got := versionsDisagree("0.3.1", "0.3.0", fix, "\tversion = \"0.3.0\""); len(got) != 0 {
		t.Errorf("a chart fix named in Unreleased: reported %q", got)
	}
	if got := versionsDisagree("0.3.1", "0.3.0", log, "\tversion = \"0.3.0\""); len(got) != 1 {
		t.Errorf("a chart version no section names: reported %q, want 1 problem", got)
	}
	if got := versionsDisagree("0.2.9", "0.3.0", strings.Replace(fix, "0.3.1", "0.2.9", 1), "\tversion = \"0.3.0\""); len(got) != 1 {
		t.Errorf("a chart version behind the release: reported %q, want 1 problem", got)
	}
}
