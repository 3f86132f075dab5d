package methods_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// FuzzNoPathEscape feeds resources/read and resources/directory/read any
// URI, however encoded: whatever the sidecar answers with content must be a
// file or directory the catalog holds under exactly that URI, never bytes
// from anywhere else.
func FuzzNoPathEscape(f *testing.F) {
	for _, s := range []string{
		"skill://incident-summary/SKILL.md", "skill://incident-summary/../../etc/passwd",
		"skill://incident-summary/%2e%2e/%2e%2e/etc/passwd", "skill://acme/billing/refunds/examples/",
		"SKILL://incident-summary/SKILL.md", "skill://incident-summary\\..\\SKILL.md", "skill://incident-summary/SKILL.md\x00",
		"skill://incident-summary/\xc0\xaeSKILL.md", "skill:///etc/passwd", "skill://acme/billing/refunds/../refunds/SKILL.md",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	snap, err := catalog.LoadFS(examples.Plugin(), catalog.Options{})
	if err != nil {
		f.Fatal(err)
	}
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }})
	f.Fuzz(func(t *testing.T, uri string, read bool) {
		method := "resources/directory/read"
		if read {
			method = "resources/read"
		}
		params, _ := json.Marshal(map[string]string{"uri": uri})
		msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage("1"), Method: method, Params: params}
		w := httptest.NewRecorder()
		if !serveLocal(h, w, httptest.NewRequest(http.MethodPost, "/mcp", nil), msg) {
			if strings.HasPrefix(uri, catalog.Scheme) {
				t.Fatalf("%s %q forwarded although it is a skill URI", method, uri)
			}
			return
		}
		var reply struct {
			Result *struct {
				Contents []struct {
					URI  string  `json:"uri"`
					Text *string `json:"text"`
					Blob *string `json:"blob"`
				} `json:"contents"`
				Resources []struct {
					URI string `json:"uri"`
				} `json:"resources"`
			} `json:"result"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &reply); err != nil {
			t.Fatalf("%s %q: reply is not JSON: %v", method, uri, err)
		}
		if reply.Result == nil {
			return // an error: nothing served
		}
		if read {
			file, ok := snap.File(uri)
			if !ok || len(reply.Result.Contents) != 1 {
				t.Fatalf("resources/read %q served content for a URI the catalog does not hold", uri)
			}
			c := reply.Result.Contents[0]
			var got []byte
			if c.Text != nil {
				got = []byte(*c.Text)
			} else if c.Blob != nil {
				got, _ = base64.StdEncoding.DecodeString(*c.Blob)
			}
			if !bytes.Equal(got, file.Data) {
				t.Fatalf("resources/read %q served bytes that are not the catalog file's", uri)
			}
			return
		}
		if _, ok := snap.Dir(uri); !ok {
			t.Fatalf("resources/directory/read %q listed a directory the catalog does not hold", uri)
		}
		for _, r := range reply.Result.Resources {
			if !strings.HasPrefix(r.URI, uri+"/") {
				t.Fatalf("directory %q listed %q outside it", uri, r.URI)
			}
		}
	})
}

// FuzzAppendCompat feeds host compatibility's edit of prompts/list and
// tools/list any upstream reply: it never panics, what is not JSON comes
// back unchanged, and what it changes stays valid JSON that keeps the
// upstream's own entries.
func FuzzAppendCompat(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"skill_load","inputSchema":{}}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"a"}],"nextCursor":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"prompts":[],"ttlMs":9,"cacheScope":"public"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":{}}}`, `{"jsonrpc":"2.0","id":1,"result":{"prompts":[1,"x",null]}}`,
		`[]`, `{`, ``,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	snap, err := catalog.LoadFS(examples.Plugin(), catalog.Options{})
	if err != nil {
		f.Fatal(err)
	}
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap },
		HostCompat: methods.HostCompat{Prompts: true, Tools: true}})
	f.Fuzz(func(t *testing.T, upstream string, prompts bool) {
		method := "tools/list"
		if prompts {
			method = "prompts/list"
		}
		msg := rewrite.Message{Kind: rewrite.KindRequest, ID: json.RawMessage("1"), Method: method, Params: json.RawMessage(`{}`)}
		edit := h.EditReply(httptest.NewRequest(http.MethodPost, "/mcp", nil), msg)
		if edit == nil {
			t.Fatalf("no edit of %s with host-compat on", method)
		}
		out := edit([]byte(upstream))
		if !json.Valid([]byte(upstream)) {
			if string(out) != upstream {
				t.Fatalf("edit(%q) = %q, want it unchanged", upstream, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("edit(%q) = %q, not JSON", upstream, out)
		}
	})
}
