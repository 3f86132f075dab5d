package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	return faultSidecarWith(t, upstream, nil)
}

// faultSidecarWith is faultSidecar with its options (an upstream timeout
// of 5 s) changed by set, if not nil.
func faultSidecarWith(t *testing.T, upstream string, set func(*proxy.Options)) (string, *prometheus.Registry, *observer.ObservedLogs) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zapcore.DebugLevel)
	opts := proxy.Options{Upstream: u, Declaration: rewrite.SkillsSidecar(),
		Metrics: metrics.New(reg, "test"), Logger: zap.New(core), UpstreamTimeout: 5 * time.Second}
	if set != nil {
		set(&opts)
	}
	p, err := proxy.New(opts)
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

// TestEarlyAnswerThatKeepsTheConnectionReachesTheCaller: the upstream
// answers 413 (or 401) as soon as it has the request head, without
// Connection: close, and then reads nothing more of a 16 MiB body (more
// than the socket buffers hold) nor closes. The caller gets that answer at once, as net/http's Transport
// hands it over while its write still waits (RFC 9112, 9.6), not a 504
// after the upstream timeout, here far longer than the test's guard. The
// next request does not go on the connection left half written: the
// upstream reads the head of every request the sidecar sends.
func TestEarlyAnswerThatKeepsTheConnectionReachesTheCaller(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusRequestEntityTooLarge, http.StatusUnauthorized} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			reply := func(*http.Request, []byte) faultserver.Reply {
				return faultserver.Reply{Status: status, Body: []byte(`{"error":"no"}`),
					Header: http.Header{"Www-Authenticate": {`Bearer resource_metadata="http://auth.example/x"`}, "Content-Type": {"application/json"}}}
			}
			up := faultserver.Start(t, faultserver.Options{Mode: faultserver.EarlyReplyKeep, Reply: reply})
			u, _, _ := faultSidecarWith(t, up.URL+"/mcp", func(o *proxy.Options) {
				o.UpstreamTimeout = time.Hour
				o.MaxBodyBytes = 32 << 20
			})
			const calls = 3
			for i := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard only
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(bigCall(16<<20)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					cancel()
					t.Fatalf("call %d: %v; want the upstream's %d", i, err, status)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				if err != nil || resp.StatusCode != status || string(b) != `{"error":"no"}` ||
					resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="http://auth.example/x"` {
					t.Fatalf("call %d: got %d %q (%v) WWW-Authenticate %q, want the upstream's %d", i, resp.StatusCode, b, err, resp.Header.Get("WWW-Authenticate"), status)
				}
			}
			if got := up.Requests(); got != calls {
				t.Errorf("the upstream read %d request heads, want %d: a request went on a connection left half written", got, calls)
			}
		})
	}
}
