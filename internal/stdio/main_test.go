package stdio

import (
	"os"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/stdioserver"
)

// TestMain lets the test binary be the stdio test server
// (stdioserver.Main), which the tests run as the upstream.
func TestMain(m *testing.M) {
	stdioserver.Main()
	os.Exit(m.Run())
}

// testCommand is the argv and environment that run the test server in mode.
func testCommand(t testing.TB, mode string) ([]string, []string) {
	t.Helper()
	argv, env, err := stdioserver.Command(mode)
	if err != nil {
		t.Fatal(err)
	}
	return argv, env
}
