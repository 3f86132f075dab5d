package main

import (
	"os"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/stdioserver"
)

// TestMain lets the test binary be the stdio test server
// (stdioserver.Main), which the stdio tests run as the upstream.
func TestMain(m *testing.M) {
	stdioserver.Main()
	os.Exit(m.Run())
}
