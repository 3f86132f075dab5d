package sidecartest

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// Wire constants the tests spell out themselves rather than borrow from the
// code under test, so that a wrong constant there cannot pass here.
const (
	LegacyVersion  = "2025-11-25"
	ModernVersion  = "2026-07-28"
	MetaVersionKey = "io.modelcontextprotocol/protocolVersion"
	MetaCapsKey    = "io.modelcontextprotocol/clientCapabilities"
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// Reason is the error's data.reason, "" when it has none (or e is nil).
func (e *RPCError) Reason() string {
	var d struct {
		Reason string `json:"reason"`
	}
	if e != nil {
		_ = json.Unmarshal(e.Data, &d)
	}
	return d.Reason
}

// Reply is one HTTP reply carrying one JSON-RPC response.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte // the JSON-RPC message (the data of the SSE event when streamed)
	Result json.RawMessage
	Error  *RPCError
}

// Caller sends raw JSON-RPC POSTs the way a go-sdk v1.8.0 client does in its
// era: legacy requests carry the session id and version header; modern
// requests carry _meta protocolVersion and clientCapabilities and the
// MCP-Protocol-Version, Mcp-Method and (resources/read) Mcp-Name headers.
type Caller struct {
	T        TB
	Endpoint string
	Modern   bool
	Session  string
	Token    string
	// CS is the go-sdk client session the caller was dialled with, if any.
	CS *mcp.ClientSession
}

// Call sends method with params in the caller's era and returns the reply.
func (c *Caller) Call(method string, params map[string]any) Reply {
	c.T.Helper()
	return c.CallWith(method, params, nil)
}

// CallWith is Call with a hook that edits the headers and the decoded
// request before it is sent (to break one thing on purpose).
func (c *Caller) CallWith(method string, params map[string]any, edit func(h http.Header, req map[string]any)) Reply {
	c.T.Helper()
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Modern {
		p["_meta"] = map[string]any{MetaVersionKey: ModernVersion, MetaCapsKey: map[string]any{}}
		h.Set("MCP-Protocol-Version", ModernVersion)
		h.Set("Mcp-Method", method)
		if uri, ok := p[wire.NameParam(method)].(string); ok {
			h.Set("Mcp-Name", wire.EncodeHeaderValue(uri)) // as a conformant client writes it
		}
	} else {
		h.Set("MCP-Protocol-Version", LegacyVersion)
		if c.Session != "" {
			h.Set("Mcp-Session-Id", c.Session)
		}
	}
	req := map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": p}
	if edit != nil {
		edit(h, req)
	}
	return PostJSON(c.T, c.Endpoint, h, req)
}

// PostJSON sends req, encoded as JSON, to endpoint with the headers of h
// and returns the reply: of a streamed reply, the first event that is a
// response or an error.
func PostJSON(t TB, endpoint string, h http.Header, req any) Reply {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, raw := Post(t, endpoint, string(body), h)
	rp := Reply{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		rp.Body = nil
		sr := rewrite.NewReader(bytes.NewReader(raw), 0)
		for {
			ev, err := sr.Next()
			if err != nil {
				break
			}
			if m, perr := rewrite.ParseMessage(ev.Data); perr == nil && (m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError) {
				rp.Body = ev.Data
				break
			}
		}
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if len(rp.Body) > 0 && json.Unmarshal(rp.Body, &msg) == nil {
		rp.Result, rp.Error = msg.Result, msg.Error
	}
	return rp
}

// OK fails the test unless the reply is a 200 success, and decodes its
// result into v when v is not nil.
func (r Reply) OK(t TB, what string, v any) {
	t.Helper()
	if r.Status != http.StatusOK || r.Error != nil || r.Result == nil {
		t.Fatalf("%s: HTTP %d, body %s; want HTTP 200 with a result", what, r.Status, r.Body)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result, v); err != nil {
			t.Fatalf("%s: decode result %s: %v", what, r.Result, err)
		}
	}
}

// Failed fails the test unless the reply is a JSON-RPC error with this code
// carried by this HTTP status.
func (r Reply) Failed(t TB, what string, status, code int) *RPCError {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("%s: HTTP %d, body %s; want error %d", what, r.Status, r.Body, code)
	}
	if r.Status != status || r.Error.Code != code {
		t.Errorf("%s = HTTP %d code %d (%s), want HTTP %d code %d", what, r.Status, r.Error.Code, r.Error.Message, status, code)
	}
	return r.Error
}

// MustMarshal is v encoded as JSON; it fails the test when v cannot be.
func MustMarshal(t TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BigFileURI is the file of BigSkill that its upstreams serve themselves.
const BigFileURI = "skill://big/data.bin"

// BigSkill writes a plugin whose skill big has a placeholder data.bin, and
// returns its catalog and the 16 MiB (the most SEP-2640 lets a whole skill
// hold) that an upstream serves for that file.
func BigSkill(t TB) (*catalog.Snapshot, []byte) {
	t.Helper()
	dir := t.TempDir()
	WriteTree(t, filepath.Join(dir, "skills", "big"), map[string]string{"SKILL.md": "---\nname: big\ndescription: Big.\n---\n", "data.bin": "placeholder"})
	snap, err := catalog.Load(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	return snap, data
}
