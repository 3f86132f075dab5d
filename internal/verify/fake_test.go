package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeFile is one resource the fake serves.
type fakeFile struct {
	text string
	blob []byte
	mime string
}

func (f fakeFile) bytes() []byte {
	if f.blob != nil {
		return f.blob
	}
	return []byte(f.text)
}

// fakeServer is a small skills and agents server answering from tables a
// test can corrupt. It speaks both eras with JSON replies.
type fakeServer struct {
	caps     map[string]any
	modern   bool // answers server/discover
	skills   []map[string]any
	pageSize int
	files    map[string]fakeFile
	agents   []map[string]any
	agentGet map[string]map[string]any
	tools    []map[string]any
	status   int // non-zero: every request gets this HTTP status

	endlessCursor bool // skills/list always offers another page
	splitEntry    bool // the last entry of a page repeats on the next
	getOverride   map[string]any
	unknownGetOK  bool // skills/get of an unknown URI succeeds
	noCache       bool // modern results lack ttlMs and cacheScope
	noAgentReason bool // agents/get of an unknown agent has no data.reason
	noSkills      bool // skills/* are unknown methods (an agents-only server)
	hideDirEntry  string
}

const (
	refundsMD = "---\nname: refunds\ndescription: Refund duplicate charges.\nlicense: Apache-2.0\nmetadata:\n  owner: billing\n  version: \"1.0\"\n---\n# Refunds\n\nSee examples/dup.md.\n"
	notesMD   = "---\r\nname: notes\r\ndescription: >-\r\n  Keep short notes.\r\ncreated: 2024-01-15\r\ncount: 010\r\n---\r\nbody\r\n"
)

// newFake returns a conformant server: two skills (one with a blob and a
// subdirectory), one agent with one tool.
func newFake() *fakeServer {
	f := &fakeServer{
		caps: map[string]any{
			"resources": map[string]any{},
			"tools":     map[string]any{},
			"extensions": map[string]any{
				skillsExtension: map[string]any{"directoryRead": true},
				agentsExtension: map[string]any{"listChanged": true},
			},
		},
		modern:   true,
		pageSize: 1,
		files: map[string]fakeFile{
			"skill://acme/billing/refunds/SKILL.md":         {text: refundsMD, mime: "text/markdown"},
			"skill://acme/billing/refunds/examples/dup.md":  {text: "# Duplicate\n\nhéllo\r\n", mime: "text/markdown"},
			"skill://acme/billing/refunds/assets/flow.png":  {blob: []byte{0x89, 'P', 'N', 'G', 0, 0xff}, mime: "image/png"},
			"skill://acme/billing/refunds/assets/deep/x.sh": {text: "echo hi\n", mime: "text/x-sh"},
			"skill://notes/SKILL.md":                        {text: notesMD, mime: "text/markdown"},
		},
		tools: []map[string]any{
			{"name": "echo", "description": "Echo.", "inputSchema": map[string]any{"type": "object"}},
			{"name": "add", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}}},
		},
	}
	f.skills = []map[string]any{
		f.entry("skill://acme/billing/refunds/SKILL.md", map[string]any{"name": "refunds", "description": "Refund duplicate charges.",
			"license": "Apache-2.0", "metadata": map[string]any{"owner": "billing", "version": "1.0"}}),
		f.entry("skill://notes/SKILL.md", map[string]any{"name": "notes", "description": "Keep short notes.", "created": "2024-01-15", "count": 10}),
	}
	f.agents = []map[string]any{{"name": "helper", "description": "Helps.", "capabilities": []any{"notes"}}}
	// The agents draft's GetAgentResult: agent is the name; the cache
	// fields are part of the result in either era.
	f.agentGet = map[string]map[string]any{"helper": {
		"resultType":       "complete",
		"agent":            "helper",
		"instructions":     "Be helpful.",
		"modelRoutingHint": map[string]any{"role": "small", "vision": false},
		"tools":            []any{f.tools[0]},
		"ttlMs":            0,
		"cacheScope":       "private",
	}}
	return f
}

// entry builds a skill entry listing every file under the skill's root.
func (f *fakeServer) entry(uri string, fm map[string]any) map[string]any {
	root := strings.TrimSuffix(uri, "/SKILL.md")
	var res []any
	for _, u := range slices.Sorted(maps.Keys(f.files)) {
		if strings.HasPrefix(u, root+"/") {
			res = append(res, resEntry(u, f.files[u].bytes()))
		}
	}
	return map[string]any{"uri": uri, "frontmatter": fm, "resources": res}
}

func resEntry(uri string, b []byte) map[string]any {
	sum := sha256.Sum256(b)
	return map[string]any{"uri": uri, "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(b)}
}

func (f *fakeServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.status != 0 {
		http.Error(w, http.StatusText(f.status), f.status)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params map[string]any  `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	_, modern := req.Params["_meta"]
	result, code, msg := f.answer(req.Method, req.Params, modern)
	reply := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if code != 0 {
		e := map[string]any{"code": code, "message": msg}
		if msg == "agent_not_found" && !f.noAgentReason {
			e["message"] = "Agent not found"
			e["data"] = map[string]any{"reason": "agent_not_found"}
		}
		reply["error"] = e
	} else {
		// agents/get results carry their own cache fields (f.agentGet), so
		// that a case can remove one.
		if modern && !f.noCache && req.Method != "agents/get" {
			result["resultType"] = "complete"
			if _, ok := result["ttlMs"]; !ok {
				result["ttlMs"] = 0
				result["cacheScope"] = "private"
			}
		}
		reply["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

func (f *fakeServer) answer(method string, p map[string]any, modern bool) (map[string]any, int, string) {
	str := func(k string) string { s, _ := p[k].(string); return s }
	if f.noSkills && strings.HasPrefix(method, "skills/") {
		return nil, -32601, "method not found"
	}
	switch method {
	case "initialize":
		return map[string]any{"protocolVersion": legacyVersion, "capabilities": f.caps,
			"serverInfo": map[string]any{"name": "fake", "version": "1"}}, 0, ""
	case "server/discover":
		if !f.modern {
			return nil, -32601, "method not found"
		}
		return map[string]any{"supportedVersions": []string{modernVersion}, "capabilities": f.caps}, 0, ""
	case "skills/list":
		return f.page(p, "skills", toAny(f.skills)), 0, ""
	case "skills/get":
		if f.getOverride != nil {
			return map[string]any{"skill": f.getOverride}, 0, ""
		}
		for _, s := range f.skills {
			if s["uri"] == str("uri") {
				return map[string]any{"skill": s}, 0, ""
			}
		}
		if f.unknownGetOK {
			return map[string]any{"skill": f.skills[0]}, 0, ""
		}
		return nil, codeInvalidParams, "unknown skill"
	case "resources/read":
		file, ok := f.files[str("uri")]
		if !ok {
			return nil, codeInvalidParams, "not found"
		}
		c := map[string]any{"uri": str("uri"), "mimeType": file.mime}
		if file.blob != nil {
			c["blob"] = file.blob // encoding/json writes []byte as base64
		} else {
			c["text"] = file.text
		}
		return map[string]any{"contents": []any{c}}, 0, ""
	case "resources/directory/read":
		return f.dirRead(str("uri"))
	case "tools/list":
		return map[string]any{"tools": toAny(f.tools)}, 0, ""
	case "agents/list":
		return f.page(p, "agents", toAny(f.agents)), 0, ""
	case "agents/get":
		if a, ok := f.agentGet[str("name")]; ok {
			return copyMap(a), 0, ""
		}
		return nil, codeInvalidParams, "agent_not_found"
	}
	return nil, -32601, "method not found"
}

func (f *fakeServer) page(p map[string]any, key string, all []any) map[string]any {
	start := 0
	if c, ok := p["cursor"].(string); ok {
		start, _ = strconv.Atoi(c)
	}
	if f.endlessCursor && key == "skills" {
		return map[string]any{key: []any{}, "nextCursor": strconv.Itoa(start + 1)}
	}
	from := min(start, len(all))
	to := min(start+f.pageSize, len(all))
	items := append([]any{}, all[from:to]...)
	if f.splitEntry && key == "skills" && from > 0 {
		items = append([]any{all[from-1]}, items...)
	}
	res := map[string]any{key: items}
	if to < len(all) {
		res["nextCursor"] = strconv.Itoa(to)
	}
	return res
}

// dirRead lists the direct children of a directory URI among the files.
func (f *fakeServer) dirRead(uri string) (map[string]any, int, string) {
	if _, isFile := f.files[uri]; isFile {
		return nil, codeInvalidParams, "not a directory"
	}
	children := map[string]bool{}
	for u := range f.files {
		rest, ok := strings.CutPrefix(u, uri+"/")
		if !ok {
			continue
		}
		seg, _, deeper := strings.Cut(rest, "/")
		children[uri+"/"+seg] = deeper
	}
	if len(children) == 0 {
		return nil, codeInvalidParams, "not a directory"
	}
	var out []any
	keys := slices.Sorted(maps.Keys(children))
	for _, u := range keys {
		if u == f.hideDirEntry {
			continue
		}
		r := map[string]any{"uri": u, "name": path.Base(u)}
		if children[u] {
			r["mimeType"] = "inode/directory"
		}
		out = append(out, r)
	}
	return map[string]any{"resources": out}, 0, ""
}

func toAny(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// findCheck returns the status of check name in item id ("" for the
// server-level checks).
func findCheck(rep *Report, id, name string) (Check, bool) {
	list := rep.Server
	if id != "" {
		list = nil
		for _, it := range append(append([]*Item{}, rep.Skills...), rep.Agents...) {
			if it.ID == id {
				list = it.Checks
			}
		}
	}
	for _, c := range list {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

func resources(f *fakeServer, i int) []any { return f.skills[i]["resources"].([]any) }

func setRes(f *fakeServer, skill int, uri, key string, val any) {
	for _, r := range resources(f, skill) {
		if m := r.(map[string]any); m["uri"] == uri {
			m[key] = val
		}
	}
}

var _ = fmt.Sprintf

func newHTTPServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}
