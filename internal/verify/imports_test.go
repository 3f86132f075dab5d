package verify

import (
	"os/exec"
	"strings"
	"testing"
)

// TestIndependentOfTheSidecar pins the package's promise: the verifier's own
// code imports none of the project's packages, so it judges the sidecar by
// the spec and not by the sidecar's own rules. (Its tests may import them to
// run a real sidecar.) The one exception is internal/flagargs, which reads
// a command line and knows nothing of MCP.
func TestIndependentOfTheSidecar(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/skills-sidecar/skills-sidecar/") &&
			imp != "github.com/skills-sidecar/skills-sidecar/internal/flagargs" {
			t.Errorf("verify imports %s", imp)
		}
	}
}
