package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
)

// TestReplyResetAfterHeadersIsAborted: the upstream sends a 200 head with a
// Content-Length and resets the connection before any body byte. The
// client got nothing, so the request is counted and logged as aborted,
// not 2xx (before the fix: outcome 2xx, status 200).
func TestReplyResetAfterHeadersIsAborted(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{Mode: faultserver.ResetAfterHeaders})
	u, reg, logs := faultSidecar(t, up.URL+"/mcp")
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("client got a reply, %d %q; want the connection cut", resp.StatusCode, b)
	}
	lines := requestLine(t, logs)
	var line map[string]any
	for _, e := range lines {
		if e.Message == "request failed" {
			line = e.ContextMap()
		}
	}
	if line == nil || line["outcome"] != "aborted" || line["status"] != int64(0) {
		t.Errorf("log line %v, want outcome aborted, status 0", line)
	}
	count := func(outcome string) float64 {
		c, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range c {
			if mf.GetName() != "skills_sidecar_requests_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" && l.GetValue() == outcome {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	if a, ok := count("aborted"), count("2xx"); a != 1 || ok != 0 {
		t.Errorf("requests_total: aborted %v, 2xx %v; want 1 and 0", a, ok)
	}
}
