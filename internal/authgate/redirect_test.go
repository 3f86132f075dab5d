package authgate_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestGatePassesRedirectsOn: a redirect is a status other than 200, so
// the upstream's refusal (docs/security.md): the caller of a method the
// sidecar answers gets it, status and Location, as a forwarded call gets
// it, and is not admitted on whatever the redirect's target says. The
// upstream here sends a caller whose token it does not take elsewhere (a
// login page, an endpoint of its own without auth); the sidecar's era
// probes, which carry no credentials, reach the MCP server itself.
func TestGatePassesRedirectsOn(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		status int
		to     string
	}{
		{"to an open MCP endpoint", http.StatusTemporaryRedirect, "/open"},
		{"to a login page", http.StatusFound, "/login"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mcpServer := demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true})
			mux := http.NewServeMux()
			mux.Handle("/open", mcpServer) // answers anyone
			mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<html>sign in</html>"))
			})
			mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
				if a := r.Header.Get("Authorization"); a != "" && a != "Bearer "+token {
					http.Redirect(w, r, tt.to, tt.status)
					return
				}
				mcpServer.ServeHTTP(w, r)
			})
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			s := sidecartest.Start(t, srv.URL+"/mcp", sidecartest.Options{Plugin: examples.Plugin(), Config: func(c *config.Config) {
				c.AuthGate, c.UpstreamFiles = "upstream", "off"
			}})
			bad := http.Header{"Authorization": {"Bearer wrong"}}
			// tools/list is forwarded: what it gets is what the upstream said.
			for _, c := range []call{{"tools/list", `{}`}, {"skills/list", `{}`}, {"skills/get", `{"uri":"skill://incident-summary/SKILL.md"}`}} {
				resp, body := postUnredirected(t, s.URL, c, bad)
				if resp.StatusCode != tt.status || resp.Header.Get("Location") != tt.to {
					t.Errorf("%s with a token the upstream redirects = %d (Location %q) %s, want the upstream's %d to %q",
						c.method, resp.StatusCode, resp.Header.Get("Location"), body, tt.status, tt.to)
				}
				if strings.Contains(body, "skill://") {
					t.Errorf("%s with a token the upstream redirects leaked content: %s", c.method, body)
				}
			}
			resp, body := postUnredirected(t, s.URL, call{"skills/list", `{}`}, http.Header{"Authorization": {"Bearer " + token}})
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "skill://") {
				t.Errorf("skills/list with the token = %d %s, want the listing", resp.StatusCode, body)
			}
		})
	}
}

// postUnredirected sends c on the 2026-07-28 wire as do does, with a
// client that follows no redirect, and returns the reply and its body.
func postUnredirected(t *testing.T, u string, c call, hdr http.Header) (*http.Response, string) {
	t.Helper()
	params := strings.Replace(c.params, "{", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`, 1)
	params = strings.Replace(params, ",}", "}", 1)
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+c.method+`","params":`+params+`}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", c.method)
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
