package verify

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFatalReportIsNotOK: a run that could not check the server at all (no
// HTTP answer, or 401/403) says so in the report's status and in the text's
// verdict lines, as its exit code does: neither may read "ok" to a person
// or a script reading the report rather than the exit status.
func TestFatalReportIsNotOK(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/mcp"
	_ = ln.Close()
	unauthorized := newFake()
	unauthorized.status = http.StatusUnauthorized
	for name, url := range map[string]func(*testing.T) string{
		"closed port": func(*testing.T) string { return closed },
		"401":         unauthorized.start,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rep := Verify(ctx, Options{URL: url(t)})
			text := textOf(t, rep)
			if rep.ExitCode == ExitOK {
				t.Fatalf("exit %d, want a failure\n%s", rep.ExitCode, text)
			}
			if rep.Status != StatusFail {
				t.Errorf("report status %q with exit %d, want %q\n%s", rep.Status, rep.ExitCode, StatusFail, text)
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "OK") || strings.HasPrefix(line, "ok ") {
					t.Errorf("text line %q reads ok for a server not verified (exit %d)\n%s", line, rep.ExitCode, text)
				}
			}
		})
	}
}
