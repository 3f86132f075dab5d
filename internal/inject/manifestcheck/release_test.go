package manifestcheck

import (
	"os"
	"regexp"
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
// changelog must all be one version.
func versionsDisagree(chartVersion, appVersion, changelog, runGo string) []string {
	var bad []string
	rel := releaseHeading.FindStringSubmatch(changelog)
	bin := binaryVersion.FindStringSubmatch(runGo)
	if rel == nil {
		return []string{"CHANGELOG.md has no dated release heading"}
	}
	if chartVersion != rel[1] {
		bad = append(bad, "Chart.yaml version "+chartVersion+" is not the newest release "+rel[1])
	}
	if appVersion != rel[1] {
		bad = append(bad, "Chart.yaml appVersion "+appVersion+" is not the newest release "+rel[1])
	}
	if bin == nil || bin[1] != rel[1] {
		bad = append(bad, "cmd/skills-sidecar/run.go's version is not the newest release "+rel[1])
	}
	return bad
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
}
