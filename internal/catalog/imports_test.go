package catalog

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoLoggingMetricsOrNetwork pins STYLE §3/§14: the catalog reports
// through return values and ReloadEvent, never through a logger, metrics or
// the network.
func TestNoLoggingMetricsOrNetwork(t *testing.T) {
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
		for _, banned := range []string{"log", "log/slog", "net", "net/http", "go.uber.org/zap", "github.com/prometheus/client_golang/prometheus"} {
			if imp == banned {
				t.Errorf("catalog imports %s", imp)
			}
		}
	}
}
