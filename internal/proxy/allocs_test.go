package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// maxForwardAllocs bounds the heap allocations the sidecar adds to one
// forwarded tools/call: its handler, its net/http server and its upstream
// round trip. It was 89 before the forwarding-cost work and is 70 after
// it (74 under -race), most of them net/http's; the bound leaves room for
// noise, not for a step undone.
const maxForwardAllocs = 78

// TestForwardAllocations counts, in process, the allocations of a small
// tools/call through the sidecar against the same call made directly, and
// bounds the difference. Counts, not times: nothing here depends on how
// fast the machine is.
func TestForwardAllocations(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/mcp")
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar(), Metrics: metrics.New(prometheus.NewRegistry(), "allocs")})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	defer side.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	call := func(target string) func() {
		return func() {
			req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	// The fewest of three measures each: a stray allocation of the
	// runtime or of a pool refill lands in one of them, not in all.
	least := func(f func()) float64 {
		f() // warm: connections dialled, pools filled
		m := testing.AllocsPerRun(200, f)
		for range 2 {
			m = min(m, testing.AllocsPerRun(200, f))
		}
		return m
	}
	direct := least(call(up.URL + "/mcp"))
	through := least(call(side.URL + "/mcp"))
	added := through - direct
	t.Logf("allocations per request: direct %.0f, through the sidecar %.0f, added %.0f", direct, through, added)
	if added > maxForwardAllocs {
		t.Errorf("the sidecar adds %.0f allocations per forwarded tools/call, want at most %d", added, maxForwardAllocs)
	}
}
