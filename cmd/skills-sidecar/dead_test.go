package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// modernPost sends one 2026-07-28 request for method with params and returns
// the HTTP status and data.reason of an error ("" for a result).
func modernPost(t *testing.T, addr, method, params string) (int, string) {
	t.Helper()
	return modernPostAs(t, addr, "", method, params)
}

// modernPostAs is modernPost with auth, when not empty, as Authorization.
func modernPostAs(t *testing.T, addr, auth, method, params string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	h := sidecartest.Header("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method)
	var p map[string]any
	if json.Unmarshal([]byte("{"+strings.TrimSuffix(params, ",")+"}"), &p) == nil {
		if n, ok := p[wire.NameParam(method)].(string); ok {
			h.Set("Mcp-Name", wire.EncodeHeaderValue(n)) // required with a target (2026-07-28)
		}
	}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	resp, b := sidecartest.Post(t, "http://"+addr+"/mcp", body, h)
	if i := strings.Index(string(b), "data: "); i >= 0 { // an SSE reply: its one event
		b = []byte(strings.TrimSpace(strings.SplitN(string(b)[i+6:], "\n", 2)[0]))
	}
	var m struct {
		Error *struct {
			Data struct {
				Reason string `json:"reason"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: HTTP %d, reply %q: %v", method, resp.StatusCode, b, err)
	}
	if m.Error != nil {
		return resp.StatusCode, m.Error.Data.Reason + "!"
	}
	return resp.StatusCode, ""
}

func readyzBody(t *testing.T, maddr string) (int, string) {
	t.Helper()
	r, err := http.Get("http://" + maddr + "/readyz")
	if err != nil {
		return 0, ""
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// TestDeadUpstreamByAuthGate runs the sidecar as main does in front of a
// closed port, with each --auth-gate setting. With none, the catalog
// answers (and an agent with tools gets upstream_unreachable), /readyz is
// 503 and says the catalog is still served, and once an upstream listens on
// the port /readyz is 200 and agents/get of the agent with tools answers.
// With upstream, the sidecar's own methods fail closed with
// upstream_unreachable and /readyz says so.
func TestDeadUpstreamByAuthGate(t *testing.T) {
	t.Parallel()
	for _, gate := range []string{"none", "upstream"} {
		t.Run(gate, func(t *testing.T) {
			t.Parallel()
			upAddr := freeAddr(t)
			s := startRun(t, true, "--upstream", "http://"+upAddr+"/mcp", "--plugin-dir", "../../examples/plugin", "--auth-gate", gate,
				"--dial-timeout", "1s")
			addr, maddr := s.addr, s.maddr
			eventually(t, "/readyz with the upstream's port closed", 503, func() int { c, _ := readyzBody(t, maddr); return c })
			_, body := readyzBody(t, maddr)
			if want := "auth-gate " + gate + ":"; !strings.Contains(body, "upstream unreachable") || !strings.Contains(body, want) {
				t.Errorf("/readyz body = %q, want it to say the upstream is unreachable and %q", body, want)
			}
			calls := []struct{ method, params string }{
				{"skills/list", ``},
				{"skills/get", `"uri":"skill://acme/billing/refunds/SKILL.md",`},
				{"agents/list", ``},
				{"resources/directory/read", `"uri":"skill://acme/billing/refunds",`},
				{"resources/read", `"uri":"skill://acme/billing/refunds/SKILL.md",`},
			}
			for _, c := range calls {
				st, reason := modernPost(t, addr, c.method, c.params)
				switch {
				case gate == "none" && (st != 200 || reason != ""):
					t.Errorf("%s, auth-gate none, upstream down: HTTP %d, error %q; want a result", c.method, st, reason)
				case gate == "upstream" && (st != http.StatusBadGateway || reason != "upstream_unreachable!"):
					t.Errorf("%s, auth-gate upstream, upstream down: HTTP %d, error %q; want 502 upstream_unreachable", c.method, st, reason)
				}
			}
			if st, reason := modernPost(t, addr, "agents/get", `"name":"billing-triage",`); st != http.StatusBadGateway || reason != "upstream_unreachable!" {
				t.Errorf("agents/get billing-triage (has tools), upstream down: HTTP %d, error %q; want 502 upstream_unreachable", st, reason)
			}

			// The upstream comes up on the port.
			ln, err := net.Listen("tcp", upAddr)
			if err != nil {
				t.Fatalf("listen on %s: %v", upAddr, err)
			}
			srv := &http.Server{Handler: demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true})} // the 2026-07-28 era the test speaks
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			eventually(t, "/readyz with the upstream up", 200, func() int { c, _ := readyzBody(t, maddr); return c })
			for _, c := range append(calls, struct{ method, params string }{"agents/get", `"name":"billing-triage",`}) {
				if st, reason := modernPost(t, addr, c.method, c.params); st != 200 || reason != "" {
					t.Errorf("%s with the upstream back: HTTP %d, error %q; want a result", c.method, st, reason)
				}
			}
		})
	}
}

// TestGatedUpstreamDiesFailsClosed: with --auth-gate upstream, an upstream
// that answered (so the sidecar holds pooled connections to it) and then
// died refuses a caller the gate has not admitted yet with 502
// upstream_unreachable, whether the probe finds a dead pooled connection or
// dials a closed port.
func TestGatedUpstreamDiesFailsClosed(t *testing.T) {
	t.Parallel()
	upAddr := freeAddr(t)
	ln, err := net.Listen("tcp", upAddr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true})}
	go func() { _ = srv.Serve(ln) }()
	addr := startRun(t, false, "--upstream", "http://"+upAddr+"/mcp", "--plugin-dir", "../../examples/plugin", "--auth-gate", "upstream").addr
	eventually(t, "skills/list with the upstream up", 200, func() int {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0
		}
		c.Close()
		st, _ := modernPost(t, addr, "skills/list", ``)
		return st
	})
	for range 3 { // several pooled connections
		modernPost(t, addr, "agents/get", `"name":"billing-triage",`)
	}
	_ = srv.Close()
	for i := range 4 {
		// Each caller new to the gate: a probe per call.
		st, reason := modernPostAs(t, addr, "Bearer caller-"+string(rune('a'+i)), "skills/list", ``)
		if st != http.StatusBadGateway || reason != "upstream_unreachable!" {
			t.Errorf("skills/list #%d by a new caller after the upstream died: HTTP %d, error %q; want 502 upstream_unreachable", i, st, reason)
		}
	}
}
