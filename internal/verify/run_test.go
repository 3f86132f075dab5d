package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestRunUsage(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"no url":        {},
		"two urls":      {"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"},
		"not http":      {"ftp://127.0.0.1/mcp"},
		"bad era":       {"http://127.0.0.1:1/mcp", "--era", "future"},
		"bad format":    {"http://127.0.0.1:1/mcp", "--format", "yaml"},
		"bad header":    {"http://127.0.0.1:1/mcp", "--header", "no colon"},
		"zero bytes":    {"http://127.0.0.1:1/mcp", "--max-bytes", "0"},
		"unknown flag":  {"http://127.0.0.1:1/mcp", "--frobnicate"},
		"zero timeout":  {"http://127.0.0.1:1/mcp", "--timeout", "0s"},
		"negative page": {"http://127.0.0.1:1/mcp", "--max-pages", "-1"},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			if got := Run(context.Background(), args, &out, &errb); got != ExitUsage {
				t.Errorf("Run(%q) = %d, want %d; stderr:\n%s", args, got, ExitUsage, errb.String())
			}
			if !strings.Contains(errb.String(), "usage: skills-sidecar verify") {
				t.Errorf("Run(%q) stderr lacks the usage text:\n%s", args, errb.String())
			}
		})
	}
}

// headerCheck answers 401 unless the request carries the token.
type headerCheck struct{ next http.Handler }

func (h headerCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Tenant") != "a" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	h.next.ServeHTTP(w, r)
}

func TestRunHeadersAndJSON(t *testing.T) {
	t.Parallel()
	f := newFake()
	srv := newHTTPServer(t, headerCheck{next: f})
	tests := map[string]struct {
		args []string
		want int
	}{
		"with headers": {args: []string{srv, "--header", "Authorization: Bearer s3cret", "--header", "X-Tenant: a", "--format", "json"}, want: ExitOK},
		"without":      {args: []string{"--format", "json", srv}, want: ExitAuth},
		"legacy era":   {args: []string{"--era", "legacy", "--header", "Authorization: Bearer s3cret", "--header=X-Tenant: a", "--format=json", srv}, want: ExitOK},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			got := Run(context.Background(), tt.args, &out, &errb)
			var rep Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("Run(%q) stdout is not one JSON report: %v\n%s", tt.args, err, out.String())
			}
			if got != tt.want || rep.ExitCode != tt.want {
				t.Errorf("Run(%q) = %d (report says %d), want %d\n%s", tt.args, got, rep.ExitCode, tt.want, out.String())
			}
		})
	}
}

func TestRunText(t *testing.T) {
	t.Parallel()
	f := newFake()
	setRes(f, 0, "skill://acme/billing/refunds/examples/dup.md", "digest", "sha256:"+hex64('b'))
	var out, errb bytes.Buffer
	got := Run(context.Background(), []string{f.start(t)}, &out, &errb)
	if got != ExitNonconformant {
		t.Errorf("Run(wrong digest) = %d, want %d", got, ExitNonconformant)
	}
	for _, want := range []string{"fail skill " + refunds, "fail files.digest: skill://acme/billing/refunds/examples/dup.md", "FAIL: 2 skills, 1 agents"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
}
