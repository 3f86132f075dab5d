package bridge

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// nasty is JSON text that any decode and re-encode would change: HTML
// characters encoding/json escapes, a raw U+2028 it escapes, non-ASCII,
// escaped slashes and unicode escapes it would unescape, number spellings
// it would respell, and whitespace it would drop.
const nasty = `{ "text" : "a&b <c> d` + "\u2028" + `e é \u00e9 \/x \u0026",  "n":1e2, "f":1.0, "neg":-0, "big":12345678901234567890, "nested":{"z":1,"a":[ 1.50 ]} }`

// handUpstream is a legacy-only MCP server written from the 2025-11-25
// streamable HTTP text, not from the bridge: it refuses server/discover
// with a plain 400, opens a session on initialize, and answers tools/list
// and tools/call with nasty as (part of) the result, in JSON or on an SSE
// stream. It records the bodies it was sent.
type handUpstream struct {
	sse    bool
	mu     sync.Mutex
	bodies []string
}

func (u *handUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, string(b))
	u.mu.Unlock()
	m, err := rewrite.ParseMessage(b)
	if err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	var result string
	switch m.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "hand-1")
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hand & <co>","version":"1"},"instructions":"use \u0026 <b>"}`
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
		return
	case "tools/list":
		result = `{"tools":[{"name":"t","description":"x & y <z>","inputSchema":{"type":"object"},"_meta":` + nasty + `}]}`
	case "tools/call":
		result = `{"content":[{"type":"text","text":"ok"}],"structuredContent":` + nasty + `}`
	case "ping": // a legacy server MUST answer it (2025-11-25 basic/utilities/ping)
		result = `{}`
	default:
		http.Error(w, "unsupported", http.StatusBadRequest)
		return
	}
	if r.Header.Get("Mcp-Session-Id") != "hand-1" && m.Method != "initialize" {
		http.Error(w, "no session", http.StatusBadRequest)
		return
	}
	reply := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`
	if u.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: "+reply+"\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, reply)
}

func (u *handUpstream) sent(method string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, b := range u.bodies {
		if strings.Contains(b, `"method":"`+method+`"`) {
			return b
		}
	}
	return ""
}

// Bytes the translation does not need to change pass byte for byte, both
// ways: the client's arguments and clientInfo reach the upstream as the
// client wrote them, and the upstream's results (and its initialize
// result's serverInfo and instructions, in server/discover) reach the
// client as the upstream wrote them, members the bridge adds aside.
//
// Shown failing: with ModernReply and LegacyRequest re-encoding through
// json.Marshal (as before this test) every case fails, on \u0026, on the
// raw U+2028 escaped, and on the dropped spaces.
func TestBridgePassesBytesUnchanged(t *testing.T) {
	for _, sse := range []bool{false, true} {
		name := "json"
		if sse {
			name = "sse"
		}
		t.Run(name, func(t *testing.T) {
			up := &handUpstream{sse: sse}
			bt, u := newBridge(t, up, 0)
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
				`"io.modelcontextprotocol/clientInfo":{"name":"me & <you>","version":"1"},"progressToken":"p&1"}`
			send := func(method, params string) string {
				t.Helper()
				body := `{"jsonrpc":"2.0","id":"x&1","method":"` + method + `","params":{` + params + `}}`
				req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", method)
				if method == "tools/call" {
					req.Header.Set("Mcp-Name", "t")
				}
				resp, err := roundTrip(bt, req)
				if err != nil {
					t.Fatalf("%s: %v", method, err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
				}
				return string(b)
			}

			got := send("tools/call", `"name":"t","arguments":`+nasty+`,`+meta)
			if want := `"structuredContent":` + nasty + `,`; !strings.Contains(got, want) {
				t.Errorf("tools/call reply\n%s\ndoes not hold the upstream's bytes\n%s", got, want)
			}
			if !strings.Contains(got, `"id":"x&1"`) {
				t.Errorf("tools/call reply %s does not echo the id as sent", got)
			}
			sent := up.sent("tools/call")
			if want := `"arguments":` + nasty + `,`; !strings.Contains(sent, want) {
				t.Errorf("the upstream was sent\n%s\nwithout the client's bytes\n%s", sent, want)
			}
			if want := `"_meta":{"progressToken":"p&1"}`; !strings.Contains(sent, want) {
				t.Errorf("the upstream was sent %s, want the modern-only _meta keys cut out leaving %s", sent, want)
			}
			if init := up.sent("initialize"); !strings.Contains(init, `"clientInfo":{"name":"me & <you>","version":"1"}`) {
				t.Errorf("initialize sent as %s: the caller's clientInfo re-encoded", init)
			}

			got = send("tools/list", meta)
			if want := `"_meta":` + nasty + `}]`; !strings.Contains(got, want) {
				t.Errorf("tools/list reply\n%s\ndoes not hold the upstream's bytes\n%s", got, want)
			}
			got = send("server/discover", meta)
			for _, want := range []string{`"name":"hand & <co>"`, `"instructions":"use \u0026 <b>"`} {
				if !strings.Contains(got, want) {
					t.Errorf("server/discover reply %s lacks the upstream's %s", got, want)
				}
			}
		})
	}
}

// LegacyRequest cuts the modern-only _meta keys out and keeps every other
// byte, also when _meta held nothing else.
func TestLegacyRequestSplices(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"only era keys": {`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"&", "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"&"}}`},
		"other keys stay": {`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/logLevel":"info","progressToken":1e0},"b":1.0}}`,
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1e0},"b":1.0}}`},
		"no meta":   {`{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"\/"}}`, `{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"\/"}}`},
		"no params": {`{"jsonrpc":"2.0","method":"m"}`, `{"jsonrpc":"2.0","method":"m"}`},
	}
	for name, c := range cases {
		m, err := rewrite.ParseMessage([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := LegacyRequest(m)
		if err != nil || !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("%s: LegacyRequest = %s, %v; want %s", name, got, err, c.want)
		}
	}
}
