package proxy_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skills-sidecar/skills-sidecar/internal/h1"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// BenchmarkForward measures one small tools/call through each hop, in
// process, against an upstream that answers at once: direct, a default
// httputil.ReverseProxy, and the sidecar's proxy with metrics on, served
// by the sidecar's own server as the binary serves it by default
// ("sidecar") and by net/http's ("sidecar-nethttp", http-server: net/http).
// Compare ns/op and allocs/op across them.
func BenchmarkForward(b *testing.B) {
	up, u, side, own := forwardRig(b)
	bare := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}})
	defer bare.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, c := range []struct{ name, body string }{
		{"tools-call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`},
		{"discover-sse", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`},
	} {
		for _, target := range []struct{ name, url string }{{"direct", up.URL}, {"bare", bare.URL}, {"sidecar", own}, {"sidecar-nethttp", side.URL}} {
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

// BenchmarkRelaySSE measures a tools/call whose reply streams sseEvents
// progress notifications and then its result over SSE, each event flushed
// by the upstream as go-sdk does, relayed by the sidecar's proxy with the
// wrappers the sidecar puts on a streamed reply (metrics, the
// resource-change watcher), against the upstream direct. It reports the
// cost per relayed event: ns/event, cpu-ns/event (the process's user and
// system CPU: upstream, client and hop; the hop's is the difference to
// direct) and allocs/event. "burst": the upstream writes the events back to
// back, so they reach the hop together; "paced": each once the client has
// the one before, so each arrives alone, as a go-sdk tool's progress
// mostly does.
func BenchmarkRelaySSE(b *testing.B) {
	const sseEvents = 50
	events := make([]string, sseEvents+1)
	for i := range sseEvents {
		events[i] = "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":` +
			strconv.Itoa(i+1) + `,"total":50,"message":"1764662400000000000"}}` + "\n\n"
	}
	events[sseEvents] = "event: message\ndata: " + `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}` + "\n\n"
	ack := make(chan struct{}, len(events))
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		paced := r.Header.Get("Bench-Paced") != ""
		for _, e := range events {
			_, _ = io.WriteString(w, e)
			f.Flush()
			if paced {
				<-ack // the client has it: the next one arrives alone
			}
		}
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/mcp")
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar(),
		Metrics:            metrics.New(prometheus.NewRegistry(), "bench"),
		OnResourcesChanged: func(*http.Request, string, string) {}})
	if err != nil {
		b.Fatal(err)
	}
	side := httptest.NewServer(p)
	defer side.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"n":50},"_meta":{"progressToken":1}}}`
	for _, target := range []struct{ name, url string }{
		{"burst/direct", up.URL}, {"burst/sidecar", side.URL}, {"paced/direct", up.URL}, {"paced/sidecar", side.URL},
	} {
		b.Run(target.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 32<<10)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := cpuTime()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, target.url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				paced := strings.HasPrefix(target.name, "paced/")
				if paced {
					req.Header.Set("Bench-Paced", "1")
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					n, err := resp.Body.Read(buf)
					for range bytes.Count(buf[:n], []byte("\n\n")) {
						if paced {
							ack <- struct{}{}
						}
					}
					if err != nil {
						break
					}
				}
				resp.Body.Close()
			}
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&after)
			n := float64(b.N) * float64(len(events))
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/event")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/event")
		})
	}
}

// cpuTime is the user and system CPU this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
func forwardRig(tb testing.TB) (up *httptest.Server, u *url.URL, side *httptest.Server, own string) {
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &h1.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	return up, u, side, "http://" + l.Addr().String()
}
