package stdio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/stdio"
)

// from is an HTTP client whose connections come from the loopback address
// ip, so that the sidecar sees one client per address.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// toolRequest is a 2026-07-28 tools/call of tool through the sidecar at u,
// as a go-sdk client of that era sends it.
func toolRequest(ctx context.Context, u string, id int, tool, text, xff string) *http.Request {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":%q},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, tool, text)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	return req
}

// TestSharedCallsShareThroughTheSidecar: through the sidecar as the
// binary assembles it, in front of a stdio server every 2026-07-28 caller
// shares one process of: a client holding its share of calls in flight
// there is refused the next one with 429 and Retry-After, however it
// forges X-Forwarded-For, while another client's call is answered.
func TestSharedCallsShareThroughTheSidecar(t *testing.T) {
	t.Parallel()
	s := startStdioSidecar(t, "modern", func(c *config.Config) { c.CallerSharePercent = 1 }) // 2 of 256
	attacker, other := from("127.0.0.2"), from("127.0.0.3")
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() {
			if resp, err := attacker.Do(toolRequest(ctx, s.URL, i, "never", "", "")); err == nil {
				_ = resp.Body.Close()
			}
		}()
	}
	sidecartest.WaitFor(t, 20*time.Second, func() bool { return s.Stdio.Calls.Len() == 2 }, "the attacker's calls in flight")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	do := func(c *http.Client, req *http.Request) (int, string, string) {
		t.Helper()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	for i, xff := range []string{"", "198.51.100.1"} {
		code, retry, body := do(attacker, toolRequest(ctx, s.URL, 10+i, "echo", "more", xff))
		if code != http.StatusTooManyRequests || retry == "" || !strings.Contains(body, `"caller_share_exhausted"`) || !strings.Contains(body, `"stdio_calls"`) {
			t.Errorf("the attacker's call past its share (X-Forwarded-For %q) = %d Retry-After %q %.300s, want 429 caller_share_exhausted in stdio_calls", xff, code, retry, body)
		}
	}
	code, _, body := do(other, toolRequest(ctx, s.URL, 20, "echo", "other's", ""))
	var got struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if i := strings.LastIndex(body, "data: "); i >= 0 { // an SSE reply: its last event is the reply
		body = strings.TrimSpace(body[i+len("data: "):])
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.Result.Content) == 0 || got.Result.Content[0].Text != "other's" {
		t.Errorf("another client's call = %d %.300s, want its echo", code, body)
	}
}

// TestQueuedBytesThroughTheSidecar: the sidecar as the binary assembles
// it gives a stdio upstream the budget of bytes held for slow readers at
// its documented size, shared by caller-share-percent as the other
// tables callers share, and counts its refusals by table from the start.
func TestQueuedBytesThroughTheSidecar(t *testing.T) {
	t.Parallel()
	s := startStdioSidecar(t, "modern", func(c *config.Config) { c.CallerSharePercent = 10 })
	if s.Stdio.MaxQueued != stdio.DefaultMaxQueued || s.Stdio.SharePercent != 10 {
		t.Errorf("budget of queued bytes %d shared by %d%%, want %d by caller-share-percent (10%%)", s.Stdio.MaxQueued, s.Stdio.SharePercent, stdio.DefaultMaxQueued)
	}
	mfs := metricstest.Gather(t, s.Registry)
	for _, refusal := range []string{"share", "full"} {
		if v, ok := metricstest.Sample(mfs, "skills_sidecar_caller_refusals_total", map[string]string{"table": stdio.TableQueuedBytes, "refusal": refusal}); !ok || v != 0 {
			t.Errorf("caller_refusals_total{table=%q,refusal=%q} = %v (present %v), want a series at 0", stdio.TableQueuedBytes, refusal, v, ok)
		}
	}
}
