package proxy_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
)

// TestDNSRebindingRefusedBySidecar is the DNS-rebinding attack: a
// page whose name rebinds to this machine sends Host: evil.example and
// Origin: http://evil.example, equal to each other. A go-sdk upstream on
// loopback refuses that Host itself, but it only ever sees the Host the
// sidecar sends (its own), so the sidecar on a loopback listener must
// refuse it as go-sdk does. Before the fix the sidecar accepted the
// Origin because it matched the Host and the upstream answered 200.
func TestDNSRebindingRefusedBySidecar(t *testing.T) {
	t.Parallel()
	var hosts atomic.Value
	sdk := upstreamHandler(upstreamModes()[3]) // stateless-2026: go-sdk's own DNS rebinding check is on
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts.Store(r.Host)
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	send := func(u, host string, origin bool) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(discover))
		req.Host = host
		if origin {
			req.Header.Set("Origin", "http://"+host)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "server/discover")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The upstream alone: the judge of what the sidecar must match.
	if status, _ := send(up.URL, "evil.example", true); status != http.StatusForbidden {
		t.Fatalf("go-sdk upstream directly: rebinding got %d, want 403", status)
	}

	sidecar := sidecarWith(t, up.URL+"/mcp", proxy.Options{})
	self := strings.TrimPrefix(strings.TrimSuffix(sidecar, "/mcp"), "http://")
	_, port, _ := net.SplitHostPort(self)
	for _, tt := range []struct {
		host   string
		origin bool
		want   int
	}{
		{"evil.example", true, http.StatusForbidden},
		{"evil.example", false, http.StatusForbidden},
		{"evil.example:" + port, true, http.StatusForbidden},
		{self, true, http.StatusOK},
		{"localhost:" + port, true, http.StatusOK},
		{"[::1]:" + port, false, http.StatusOK},
	} {
		status, body := send(sidecar, tt.host, tt.origin)
		if status != tt.want {
			t.Errorf("Host %s (Origin %v): %d %s, want %d", tt.host, tt.origin, status, body, tt.want)
		}
		if status == http.StatusOK && hosts.Load() != strings.TrimPrefix(up.URL, "http://") {
			t.Errorf("upstream saw Host %v, want its own %s", hosts.Load(), strings.TrimPrefix(up.URL, "http://"))
		}
	}

	// allowed-hosts vouches for a name: its Host and its own Origin pass,
	// and a listed Origin passes on a loopback Host.
	listed := sidecarWith(t, up.URL+"/mcp", proxy.Options{AllowedHosts: []string{"mcp.example"}, AllowedOrigins: []string{"https://app.example"}})
	if status, body := send(listed, "mcp.example:8443", true); status != http.StatusOK {
		t.Errorf("listed Host with its own Origin: %d %s, want 200", status, body)
	}
	if status, _ := send(listed, "evil.example", true); status != http.StatusForbidden {
		t.Errorf("unlisted Host next to a list: %d, want 403", status)
	}
}

// TestListenerAddressDecidesTheHostCheck: with Options.Listener naming a
// listener bound to every interface, a request that reaches it over
// loopback (a proxy in the same pod) with a Service name as Host is not
// refused; naming a loopback listener refuses it.
func TestListenerAddressDecidesTheHostCheck(t *testing.T) {
	t.Parallel()
	up := faultserver.Start(t, faultserver.Options{})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
	for _, tt := range []struct {
		listener net.Addr
		want     int
	}{
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, http.StatusOK},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, http.StatusForbidden},
	} {
		u := sidecarWith(t, up.URL+"/mcp", proxy.Options{Listener: tt.listener})
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(call))
		req.Host = "my-svc.my-ns.svc:8080"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("listener %s: status %d, want %d", tt.listener, resp.StatusCode, tt.want)
		}
	}
}
