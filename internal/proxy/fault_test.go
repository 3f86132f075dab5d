package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// The fault tests against package faultserver's misbehaving upstream,
// through the whole proxy.

// faultSidecar is a proxy (default transport) in front of upstream with
// its metrics and every log entry kept.
func faultSidecar(t *testing.T, upstream string) (string, *prometheus.Registry, *observer.ObservedLogs) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zapcore.DebugLevel)
	p, err := proxy.New(proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar(),
		Metrics: metrics.New(reg, "test"), Logger: zap.New(core), UpstreamTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", reg, logs
}

// TestSidecarCallersGetTheirOwnReplies is the first of them through
// the sidecar: after every reply the upstream writes a second one on the
// same connection 20 ms later (or its body runs past its Content-Length
// into a second response), and five callers with different credentials,
// 10 ms apart, each get exactly their own id and result, every round.
// Before the fix a caller got the reply meant for the caller two before it.
func TestSidecarCallersGetTheirOwnReplies(t *testing.T) {
	t.Parallel()
	for _, mode := range []faultserver.Mode{faultserver.Unsolicited, faultserver.ShortLength} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			t.Parallel()
			up := faultserver.Start(t, faultserver.Options{Mode: mode})
			u, _, _ := faultSidecar(t, up.URL+"/mcp")
			id := 0
			for range 4 {
				for caller := range 5 {
					id++
					cred := fmt.Sprintf("Bearer caller-%d", caller)
					resp, b := sidecartest.Post(t, u, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id),
						sidecartest.Header("Authorization", cred))
					var got struct {
						ID     json.RawMessage
						Result struct{ Caller string }
					}
					if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != http.StatusOK {
						t.Fatalf("caller %d: status %d, reply %q", id, resp.StatusCode, b)
					}
					if string(got.ID) != fmt.Sprint(id) || got.Result.Caller != cred {
						t.Fatalf("caller %d (%s) got the reply of id %s for %q", id, cred, got.ID, got.Result.Caller)
					}
					time.Sleep(10 * time.Millisecond) // the spacing
				}
			}
		})
	}
}

// bigCall is a valid JSON-RPC request of about n bytes.
func bigCall(n int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upload","arguments":{"data":"` +
		strings.Repeat("x", n) + `"}}}`
}

// TestEarlyUpstreamAnswerReachesTheCaller: the upstream answers 401 (or
// 413) with its headers and body as soon as it has the request head, and
// closes while the sidecar is still writing a 3 MiB body. The caller gets
// that answer; before the fix it got a 502 for the failed write.
func TestEarlyUpstreamAnswerReachesTheCaller(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusUnauthorized, http.StatusRequestEntityTooLarge} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			reply := func(*http.Request, []byte) faultserver.Reply {
				return faultserver.Reply{Status: status, Body: []byte(`{"error":"no"}`),
					Header: http.Header{"Www-Authenticate": {`Bearer resource_metadata="http://auth.example/x"`}, "Content-Type": {"application/json"}}}
			}
			up := faultserver.Start(t, faultserver.Options{Mode: faultserver.EarlyReply, Reply: reply})
			u, _, _ := faultSidecar(t, up.URL+"/mcp")
			for range 3 {
				resp, b := sidecartest.Post(t, u, bigCall(3<<20), nil)
				if resp.StatusCode != status || string(b) != `{"error":"no"}` ||
					resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="http://auth.example/x"` {
					t.Fatalf("got %d %q WWW-Authenticate %q, want the upstream's %d", resp.StatusCode, b, resp.Header.Get("WWW-Authenticate"), status)
				}
			}
		})
	}
}
