package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// BenchmarkForward measures one small tools/call through each hop, in
// process, against an upstream that answers at once: direct, a default
// httputil.ReverseProxy, and the sidecar's proxy with metrics on. Compare
// ns/op and allocs/op across the three.
func BenchmarkForward(b *testing.B) {
	up, u, side := forwardRig(b)
	bare := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}})
	defer bare.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, c := range []struct{ name, body string }{
		{"tools-call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`},
		{"discover-sse", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`},
	} {
		for _, target := range []struct{ name, url string }{{"direct", up.URL}, {"bare", bare.URL}, {"sidecar", side.URL}} {
			benchHop(b, client, c.name+"/"+target.name, target.url, c.body)
		}
	}
}

func benchHop(b *testing.B, client *http.Client, name, url, body string) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			postOnce(b, client, url, body)
		}
	})
}

// postOnce POSTs body to url as an MCP client does, reads the whole reply
// and returns its status.
func postOnce(tb testing.TB, client *http.Client, url, body string) int {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// forwardRig starts the upstream of the forwarding measures (a small
// tools/call reply, and a server/discover reply as SSE) and the sidecar's
// proxy in front of it, with metrics on. Both close with tb.
func forwardRig(tb testing.TB) (up *httptest.Server, u *url.URL, side *httptest.Server) {
	reply := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`
	discover := "event: message\ndata: " + `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"ttlMs":0,"cacheScope":"public"}}` + "\n\n"
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "server/discover") {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, discover)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	tb.Cleanup(up.Close)
	u, _ = url.Parse(up.URL + "/mcp")
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar(), Metrics: metrics.New(prometheus.NewRegistry(), "bench")})
	if err != nil {
		tb.Fatal(err)
	}
	side = httptest.NewServer(p)
	tb.Cleanup(side.Close)
	return up, u, side
}
