package config_test

import (
	"slices"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
)

// TestAuthHeadersDefaultIsOnBehalfs: the auth-headers default (a struct
// tag, so a literal) is the one credential default of package onbehalf,
// which the gate, the calls made on a caller's behalf and the proxy's
// connection partition fall back to when built without a Config.
func TestAuthHeadersDefaultIsOnBehalfs(t *testing.T) {
	d := config.Defaults()
	if got, want := d.AuthHeaderList(), onbehalf.DefaultCredentials(); !slices.Equal(got, want) {
		t.Errorf("auth-headers default %q, onbehalf.DefaultCredentials %q: one of them changed alone", got, want)
	}
}
