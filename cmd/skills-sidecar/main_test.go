package main

import (
	"os"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/stdioserver"
)

// TestMain lets the test binary be the stdio test server
// (stdioserver.Main), which the stdio tests run as the upstream, and the
// binary itself (main) with asMain in its environment, for tests of what
// only the binary does to its process.
func TestMain(m *testing.M) {
	stdioserver.Main()
	if os.Getenv(asMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// asMain in the environment makes the test binary run main.
const asMain = "SIDECAR_TEST_RUN_MAIN"
