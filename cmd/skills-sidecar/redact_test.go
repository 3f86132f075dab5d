package main

import (
	"context"
	"strings"
	"testing"
)

// TestUpstreamURLSecretsStayOutOfTheLog: an upstream URL with userinfo and a
// token in its query is logged redacted at start-up, and quoted redacted
// (or not at all) when the configuration is refused.
func TestUpstreamURLSecretsStayOutOfTheLog(t *testing.T) {
	t.Parallel()
	up := authUpstream(t)
	secretUp := strings.Replace(up, "http://", "http://operator:hunter2@", 1) + "?token=s3cret-token"
	_, stop := startSidecar(t, "--upstream", secretUp, "--log-format", "json")
	log := stop()
	if !strings.Contains(log, "skills-sidecar listening") {
		t.Fatalf("no start-up line in the log:\n%s", log)
	}
	for _, s := range []string{"hunter2", "s3cret", "operator"} {
		if strings.Contains(log, s) {
			t.Errorf("the log holds %q:\n%s", s, log)
		}
	}

	for _, bad := range []string{"ftp://operator:hunter2@host/mcp?token=s3cret", "http://operator:hunter2@/mcp?token=s3cret", "http://operator:hunter2@host:bad port/?token=s3cret"} {
		var out, errOut syncBuffer
		if code := run(context.Background(), []string{"--upstream", bad, "--annotations-file", ""}, nil, nil, &out, &errOut); code != exitUsage {
			t.Errorf("run with upstream %s = %d, want %d", bad, code, exitUsage)
		}
		for _, s := range []string{"hunter2", "s3cret", "operator"} {
			if strings.Contains(errOut.String(), s) {
				t.Errorf("the configuration error holds %q: %s", s, errOut.String())
			}
		}
		if !strings.Contains(errOut.String(), "upstream") {
			t.Errorf("the configuration error does not name the key: %s", errOut.String())
		}
	}
}
