package methods_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// draftTool is the tool object of the agents draft's agents/get example,
// as its text writes it (testdata/agents-get-draft.json holds the whole
// example reply, written by hand from the draft, not from our output).
const draftTool = `{"name":"list_failed_pipelines","description":"List failed pipelines for a service.",` +
	`"inputSchema":{"type":"object","properties":{"service":{"type":"string"}},"required":["service"]}}`

// draftToolsUpstream is a hand-written upstream that answers tools/list with
// the draft example's tool, byte for byte (a go-sdk server would re-encode
// it with its own member order), and initialize in the legacy era.
func draftToolsUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"draft","version":"1"}}`
		case "tools/list":
			result = `{"tools":[` + draftTool + `]}`
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestAgentsGetDraftExampleBytes pins the encoded bytes of an agents/get
// reply against the draft's own example reply: the same agent, instructions,
// routing hint, tool and cache fields must encode to exactly the example's
// bytes. The sidecar adds one member the example lacks, _meta (its
// io.skills-sidecar/agent member, and serverInfo on the modern wire), last:
// the reply must be the example up to its closing braces, then that _meta.
// The golden file has no -update on purpose: it is the judge, so it is
// never rewritten from the output it judges.
func TestAgentsGetDraftExampleBytes(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile("testdata/agents-get-draft.json")
	if err != nil {
		t.Fatal(err)
	}
	golden = bytes.TrimSpace(golden)
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, map[string]string{
		"agents/workflow-agent.md": "---\nname: workflow-agent\ndescription: Investigates delivery pipelines and approvals\n" +
			"tools: [list_failed_pipelines]\nmodel: sonnet\n---\nHandle delivery readiness and approval workflows.\n",
	})
	w := newWatcher(t, dir)
	side := newSidecar(t, draftToolsUpstream(t), w.Snapshot, func(c *config.Config) {
		// The draft's peer speaks the legacy wire only: the modern case is
		// served through the era bridge, as the binary runs by default.
		c.CacheTTLMs, c.CacheScope, c.EraBridge = 60000, "private", "auto"
	})
	for _, modern := range []bool{false, true} {
		name := map[bool]string{false: "legacy", true: "modern"}[modern]
		t.Run(name, func(t *testing.T) {
			params := `{"name":"workflow-agent"}`
			h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
			if modern {
				params = `{"name":"workflow-agent","_meta":{"` + sidecartest.MetaVersionKey + `":"` + sidecartest.ModernVersion + `","` + sidecartest.MetaCapsKey + `":{}}}`
				h.Set("MCP-Protocol-Version", sidecartest.ModernVersion)
				h.Set("Mcp-Method", "agents/get")
			} else {
				h.Set("MCP-Protocol-Version", sidecartest.LegacyVersion)
			}
			req, _ := http.NewRequest(http.MethodPost, side, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"agents/get","params":`+params+`}`))
			req.Header = h
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			got = bytes.TrimSpace(got)
			prefix := golden[:len(golden)-2] // the example without its closing "}}"
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("agents/get reply:\n%s\nwant the draft's example:\n%s\nfollowed by _meta", got, golden)
			}
			rest := got[len(prefix):]
			const open = `,"_meta":`
			if !bytes.HasPrefix(rest, []byte(open)) || !bytes.HasSuffix(rest, []byte("}}")) {
				t.Fatalf("after the draft's members the reply has %s, want only a _meta member", rest)
			}
			var meta map[string]json.RawMessage
			if err := json.Unmarshal(rest[len(open):len(rest)-2], &meta); err != nil {
				t.Fatalf("_meta %s: %v", rest, err)
			}
			for k := range meta {
				if k != methods.MetaAgent && !(modern && k == "io.modelcontextprotocol/serverInfo") {
					t.Errorf("_meta has %q, want only %q (and serverInfo on the modern wire)", k, methods.MetaAgent)
				}
			}
		})
	}
}
