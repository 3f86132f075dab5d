package proxy_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
)

// TestHTTPSUpstreamPartitionedByCredentials: the transport the sidecar
// builds (NewTransport) keeps callers with different credentials on
// different upstream connections for an https upstream too, as it does for
// http: two callers' requests, each sent twice, through the proxy to a
// go-sdk server over TLS, open two TLS connections, one per caller.
func TestHTTPSUpstreamPartitionedByCredentials(t *testing.T) {
	var conns atomic.Int32
	up := httptest.NewUnstartedServer(demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true}))
	up.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	up.StartTLS()
	defer up.Close()
	u, _ := url.Parse(up.URL)
	tr := proxy.NewTransport(5*time.Second, 15*time.Second, []string{"Authorization", "Cookie"})
	// Trust the test server's certificate, as an operator's CA bundle would.
	tr.(*hop.Transport).Fallback.(*http.Transport).TLSClientConfig = up.Client().Transport.(*http.Transport).TLSClientConfig
	t.Cleanup(tr.(*hop.Transport).CloseIdleConnections)
	p, err := proxy.New(proxy.Options{Upstream: u, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	sc := httptest.NewServer(p)
	defer sc.Close()
	client := &http.Client{Timeout: 15 * time.Second}
	for _, cred := range []string{"Bearer alice", "Bearer bob", "Bearer alice", "Bearer bob"} {
		req, _ := http.NewRequest(http.MethodPost, sc.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		req.Header.Set("Authorization", cred)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"tools"`) {
			t.Fatalf("%s: %d %s", cred, resp.StatusCode, b)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("the https upstream accepted %d connections for 2 callers, want 2", n)
	}
}
