package sidecar_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// TestListenAloneRefusedAsAShare: a subscriptions/listen the upstream does
// not serve (a go-sdk server on the 2026-07-28 wire answering it -32601,
// Method not found) is answered by the sidecar's own stream, a place of
// notify_streams. A caller past its share of that table (40 of 4096 at
// 1%) is refused as every table callers share refuses it
// (docs/security.md): HTTP 429 with Retry-After, -32603 with data.reason
// caller_share_exhausted and data.table notify_streams, counted once in
// caller_refusals_total{table="notify_streams",refusal="share"}.
func TestListenAloneRefusedAsAShare(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	inner := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := listenRequest(r); ok {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, id)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	sc := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
		c.AuthGate = "none"
		c.CallerSharePercent = 1
	}})
	sc.WaitEras(t)
	client := from("127.0.0.2")
	const share = 40 // 1% of 4096
	for i := range share {
		if code, _, body := listenOwn(t, client, sc.URL, i); code != http.StatusOK || !strings.Contains(body, "notifications/subscriptions/acknowledged") {
			t.Fatalf("listen %d within the share: HTTP %d %.200s", i, code, body)
		}
	}
	code, retry, body := listenOwn(t, client, sc.URL, share)
	var m struct {
		Error struct {
			Code int               `json:"code"`
			Data map[string]string `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("the listen past the share: HTTP %d %q, want one JSON-RPC error", code, body)
	}
	type refusal struct {
		Status   int
		HasRetry bool
		Code     int
		Data     map[string]string
	}
	want := refusal{http.StatusTooManyRequests, true, -32603, map[string]string{"reason": "caller_share_exhausted", "table": "notify_streams"}}
	if diff := cmp.Diff(want, refusal{code, retry != "", m.Error.Code, m.Error.Data}); diff != "" {
		t.Errorf("the listen past the share (-want +got):\n%s", diff)
	}
	mfs := metricstest.Gather(t, sc.Registry)
	for refusal, want := range map[string]float64{"share": 1, "full": 0} {
		if got, _ := metricstest.Sample(mfs, "skills_sidecar_caller_refusals_total", map[string]string{"table": "notify_streams", "refusal": refusal}); got != want {
			t.Errorf("caller_refusals_total{table=notify_streams,refusal=%s} = %v, want %v", refusal, got, want)
		}
	}
}

// listenOwn opens a 2026-07-28 subscriptions/listen asking for
// resourcesListChanged (a notification the sidecar sends itself) through
// the sidecar at u from client c, and returns its status, Retry-After and
// the start of its body; the stream is closed when the test ends.
func listenOwn(t *testing.T, c *http.Client, u string, i int) (int, string, string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"l%d","method":"subscriptions/listen","params":{"notifications":{"resourcesListChanged":true},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, i)
	return postListen(t, c, u, "", body)
}
