package upstreamfiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// referenceRead is the judge of readScan: the whole message decoded with
// encoding/json, as a client reads it (JSON-RPC 2.0, the resources/read
// result of the MCP schema), and the digest of the entry for uri. Keys are
// matched exactly (a map, not encoding/json's case-folding struct fields).
func referenceRead(msg []byte, uri string, id []byte) (digest string, size int, ok bool) {
	if !json.Valid(msg) {
		return "", 0, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(msg, &top) != nil {
		return "", 0, false
	}
	var version string
	if json.Unmarshal(top["jsonrpc"], &version) != nil || version != "2.0" {
		return "", 0, false
	}
	if _, m := top["method"]; m {
		return "", 0, false
	}
	if _, e := top["error"]; e || !mayAnswer(id, top["id"]) {
		return "", 0, false
	}
	var result struct {
		Contents []map[string]json.RawMessage `json:"contents"`
	}
	raw, has := top["result"]
	if !has || !bytes.HasPrefix(raw, []byte("{")) || json.Unmarshal(raw, &result) != nil {
		return "", 0, false
	}
	var data []byte
	n := 0
	for _, c := range result.Contents {
		var u string
		if r := c["uri"]; len(r) == 0 || r[0] != '"' || json.Unmarshal(r, &u) != nil || u != uri {
			continue
		}
		n++
		t, hasText := c["text"]
		b, hasBlob := c["blob"]
		var s string
		switch {
		case hasText == hasBlob:
			return "", 0, false
		case hasText:
			if t[0] != '"' || json.Unmarshal(t, &s) != nil {
				return "", 0, false
			}
			data = []byte(s)
		default:
			if b[0] != '"' || json.Unmarshal(b, &s) != nil {
				return "", 0, false
			}
			d, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return "", 0, false
			}
			data = d
		}
	}
	if n != 1 {
		return "", 0, false
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), len(data), true
}

// scanPieces feeds msg to a readScan in pieces of size n (all of it when
// n <= 0).
func scanPieces(msg []byte, uri string, id []byte, n int) (scanOutcome, Served) {
	s := newReadScan(uri, id)
	if n <= 0 {
		n = len(msg) + 1
	}
	for len(msg) > 0 {
		k := min(n, len(msg))
		s.Write(msg[:k])
		msg = msg[k:]
	}
	return s.End()
}

func sha(b string) string {
	sum := sha256.Sum256([]byte(b))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// The resources/read examples of the MCP specification: 2025-11-25
// (server/resources, "Reading Resources"), and the same shape as the
// 2026-07-28 schema's ReadResourceResult, which adds resultType and the
// cache fields (SEP-2549) around contents.
const (
	specText2025 = `{
  "jsonrpc": "2.0",
  "id": 2,
  "result": {
    "contents": [
      {
        "uri": "file:///project/src/main.rs",
        "mimeType": "text/x-rust",
        "text": "fn main() {\n    println!(\"Hello world!\");\n}"
      }
    ]
  }
}`
	specText2026 = `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","contents":[{"uri":"file:///project/src/main.rs","mimeType":"text/x-rust","text":"fn main() {\n    println!(\"Hello world!\");\n}"}],"ttlMs":60000,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}}}}`
	// The spec's blob example, with its placeholder replaced by base64.
	specBlob2026 = `{"jsonrpc":"2.0","id":"r-7","result":{"cacheScope":"public","contents":[{"uri":"file:///example.png","mimeType":"image/png","blob":"iVBORw0KGgo="}],"ttlMs":0,"resultType":"complete"}}`
	specMain     = "fn main() {\n    println!(\"Hello world!\");\n}"
)

func TestReadScan(t *testing.T) {
	t.Parallel()
	png := string([]byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})
	long := strings.Repeat("é\"\\\u2028😀x\t", 5000)
	longMsg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
		"contents": []any{map[string]any{"uri": "skill://a/f.md", "text": long}}}})
	bigBlob := strings.Repeat("\x00\xff\x10", 20000)
	bigBlobMsg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
		"contents": []any{map[string]any{"uri": "skill://a/f.bin", "blob": []byte(bigBlob)}}}})
	// Runs of every length around the scan's word and window sizes (8,
	// 64) and its text stage (8 KiB): staged escapes then a run hashed in
	// place, whose order matters.
	var runs strings.Builder
	for n := range 200 {
		runs.WriteString(strings.Repeat("x", n) + `\n`)
	}
	runs.WriteString(strings.Repeat(`\t`, 5000) + strings.Repeat("y", 5000) + `\"é` + strings.Repeat("z", 70) + `é\\`)
	runsMsg := `{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"` + runs.String() + `"}]}}`
	var runsText string
	if err := json.Unmarshal([]byte(`"`+runs.String()+`"`), &runsText); err != nil {
		panic(err)
	}
	textMsg := func(text string) string {
		return `{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"` + text + `"}]}}`
	}
	for name, tc := range map[string]struct {
		msg, uri, id string
		want         scanOutcome
		digest       string // for scanServed
	}{
		"spec 2025-11-25 text":    {specText2025, "file:///project/src/main.rs", "2", scanServed, sha(specMain)},
		"spec 2026-07-28 text":    {specText2026, "file:///project/src/main.rs", "2", scanServed, sha(specMain)},
		"spec 2026-07-28 blob":    {specBlob2026, "file:///example.png", `"r-7"`, scanServed, sha(png)},
		"long escaped text":       {string(longMsg), "skill://a/f.md", "1", scanServed, sha(long)},
		"big blob":                {string(bigBlobMsg), "skill://a/f.bin", "1", scanServed, sha(bigBlob)},
		"result before id":        {`{"result":{"contents":[{"text":"hi","uri":"u"}]},"id":1,"jsonrpc":"2.0"}`, "u", "1", scanServed, sha("hi")},
		"the entry for the URI":   {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"v","text":"no"},{"uri":"u","text":"yes"}]}}`, "u", "1", scanServed, sha("yes")},
		"escaped key and uri":     {`{"jsonrpc":"2.0","\u0069d":1,"result":{"contents":[{"uri":"\u0075","text":"a\ud83d\ude00"}]}}`, "u", "1", scanServed, sha("a😀")},
		"blob with escaped break": {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","blob":"aGk\/\naGk="}]}}`, "u", "1", scanServed, ""},
		"not found legacy":        {`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"nope"}}`, "u", "1", scanNotFound, ""},
		"not found modern":        {`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"nope"}}`, "u", "1", scanNotFound, ""},
		"refused":                 {`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no"}}`, "u", "1", scanRefused, ""},
		"wrong id":                {specText2025, "file:///project/src/main.rs", "3", scanOther, ""},
		"notification":            {`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, "u", "1", scanOther, ""},
		"spec blob placeholder":   {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","blob":"base64-encoded-data"}]}}`, "u", "1", scanInvalid, ""},
		"bytes after the reply":   {specText2026 + `{}`, "file:///project/src/main.rs", "2", scanInvalid, ""},
		"truncated":               {specText2026[:len(specText2026)-1], "file:///project/src/main.rs", "2", scanInvalid, ""},
		"two results":             {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a"}]},"result":{"contents":[{"uri":"u","text":"b"}]}}`, "u", "1", scanInvalid, ""},
		"result and error":        {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a"}]},"error":{"code":1,"message":"x"}}`, "u", "1", scanInvalid, ""},
		"two entries for the URI": {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a"},{"uri":"u","text":"b"}]}}`, "u", "1", scanInvalid, ""},
		"URI not in contents":     {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"v","text":"a"}]}}`, "u", "1", scanInvalid, ""},
		"text and blob":           {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a","blob":"YQ=="}]}}`, "u", "1", scanInvalid, ""},
		"padding mid blob":        {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","blob":"YQ==YQ=="}]}}`, "u", "1", scanInvalid, ""},
		"raw newline in text":     {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"contents\":[{\"uri\":\"u\",\"text\":\"a\nb\"}]}}", "u", "1", scanInvalid, ""},
		"runs of every length":    {runsMsg, "u", "1", scanServed, sha(runsText)},
		"control byte past 64":    {textMsg(strings.Repeat("a", 100) + "\x01b"), "u", "1", scanInvalid, ""},
		"control byte at 63":      {textMsg(strings.Repeat("a", 63) + "\x1fb"), "u", "1", scanInvalid, ""},
		"bad UTF-8 before escape": {textMsg("ab\xffc\\n"), "u", "1", scanInvalid, ""},
		"bad UTF-8 past 64":       {textMsg(strings.Repeat("a", 90) + "\xc3(\\n"), "u", "1", scanInvalid, ""},
		"bad UTF-8 at a stop":     {textMsg("abcdefg\xe2\\n"), "u", "1", scanInvalid, ""},
		"lone surrogate":          {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"\ud83d"}]}}`, "u", "1", scanInvalid, ""},
		"no jsonrpc":              {`{"id":1,"result":{"contents":[{"uri":"u","text":"a"}]}}`, "u", "1", scanInvalid, ""},
		"batch":                   {`[{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a"}]}}]`, "u", "1", scanInvalid, ""},
		// encoding/json matches struct fields case-insensitively (last
		// wins), a JavaScript client exactly: no one digest is right.
		"Text beside text":         {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a","Text":"b"}]}}`, "u", "1", scanInvalid, ""},
		"Contents beside contents": {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"contents\":[{\"uri\":\"u\",\"text\":\"a\"}],\"Contents\":[]}}", "u", "1", scanInvalid, ""},
		"long-s contents":          {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a"}],"contentſ":[]}}`, "u", "1", scanInvalid, ""},
		"URI beside uri":           {`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","URI":"v","text":"a"}]}}`, "u", "1", scanInvalid, ""},
		// Clients match ids by value (replyid.go): every spelling a client
		// takes is the reply.
		"id as a string":          {`{"jsonrpc":"2.0","id":"1","result":{"contents":[{"uri":"u","text":"a"}]}}`, "u", "1", scanServed, sha("a")},
		"id as 1.0":               {`{"jsonrpc":"2.0","id":1.0,"result":{"contents":[{"uri":"u","text":"a"}]}}`, "u", "1", scanServed, sha("a")},
		"id as 1e0, not found":    {`{"jsonrpc":"2.0","id":1e0,"error":{"code":-32602,"message":"x"}}`, "u", "1", scanNotFound, ""},
		"server request, same id": {`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`, "u", "1", scanOther, ""},
		"method beside a result":  {`{"jsonrpc":"2.0","id":"1","method":null,"result":{"contents":[{"uri":"u","text":"a"}]}}`, "u", "1", scanInvalid, ""},
		"ID beside id":            {`{"jsonrpc":"2.0","id":1,"ID":2,"result":{"contents":[{"uri":"u","text":"a"}]}}`, "u", "1", scanInvalid, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ref, _, refOK := referenceRead([]byte(tc.msg), tc.uri, []byte(tc.id))
			if tc.want == scanServed && !refOK {
				t.Fatalf("the case is wrong: encoding/json does not read a digest from %q", tc.msg)
			}
			if tc.digest != "" && tc.digest != ref {
				t.Fatalf("the case is wrong: encoding/json reads %s, the case says %s", ref, tc.digest)
			}
			for _, n := range []int{0, 1, 2, 3, 7, 100, 4096, 32 << 10} {
				got, s := scanPieces([]byte(tc.msg), tc.uri, []byte(tc.id), n)
				if got != tc.want {
					t.Fatalf("in pieces of %d: outcome %d, want %d", n, got, tc.want)
				}
				if got == scanServed && s.Digest != ref {
					t.Fatalf("in pieces of %d: digest %s, want %s", n, s.Digest, ref)
				}
			}
		})
	}
}

// TestReadScanFrontmatter: a SKILL.md's frontmatter is parsed from the
// text served, escapes decoded; one that does not parse withholds the skill.
func TestReadScanFrontmatter(t *testing.T) {
	t.Parallel()
	msg := `{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"skill://a/SKILL.md","mimeType":"text/markdown","text":"---\nname: a\ndescription: \"Served \u00e9\"\n---\nbody"}]}}`
	for _, n := range []int{0, 1, 5} {
		got, s := scanPieces([]byte(msg), "skill://a/SKILL.md", []byte("1"), n)
		if got != scanServed || string(s.Frontmatter) != `{"name":"a","description":"Served é"}` {
			t.Fatalf("in pieces of %d: %d, frontmatter %s", n, got, s.Frontmatter)
		}
	}
	// One without frontmatter is served bytes all the same: its digest is
	// known and its skill withheld, with the catalog's reason.
	got, s := scanPieces([]byte(strings.Replace(msg, `---\n`, ``, 1)), "skill://a/SKILL.md", []byte("1"), 0)
	if got != scanServed || s.Frontmatter != nil || !strings.Contains(s.Withheld, "no YAML frontmatter") {
		t.Fatalf("a SKILL.md without frontmatter: %d, frontmatter %s, withheld %q; want served, withheld for having no frontmatter", got, s.Frontmatter, s.Withheld)
	}
}

// TestReadScanReuse: one scan reads the messages of an SSE reply one after
// another, each judged alone.
func TestReadScanReuse(t *testing.T) {
	t.Parallel()
	s := newReadScan("file:///project/src/main.rs", []byte("2"))
	s.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"text":"x"}}`))
	if got, _ := s.End(); got != scanOther {
		t.Fatalf("notification: %d", got)
	}
	s.Write([]byte(specText2026))
	if got, sv := s.End(); got != scanServed || sv.Digest != sha(specMain) {
		t.Fatalf("reply after a notification: %d %s", got, sv.Digest)
	}
}

// FuzzReadScan: whatever the message and however it is cut, readScan either
// fails or reports the digest and size encoding/json reads from the whole
// message; never another.
func FuzzReadScan(f *testing.F) {
	for _, m := range []string{specText2025, specText2026, specBlob2026,
		`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","blob":"aGk\/\naGk="}]}}`,
		`{"jsonrpc":"2.0","\u0069d":1,"result":{"contents":[{"uri":"\u0075","text":"a\ud83d\ude00"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"v","text":"no"},{"uri":"u","text":"yes"}]}}`,
	} {
		f.Add([]byte(m), "file:///project/src/main.rs", uint8(3))
		f.Add([]byte(m), "u", uint8(0))
		f.Add([]byte(m), "file:///example.png", uint8(1))
	}
	f.Fuzz(func(t *testing.T, msg []byte, uri string, cut uint8) {
		for _, id := range []string{"1", "2", `"r-7"`} {
			got, s := scanPieces(msg, uri, []byte(id), int(cut))
			if got != scanServed {
				continue
			}
			d, n, ok := referenceRead(msg, uri, []byte(id))
			if !ok {
				t.Fatalf("readScan read %s from %q (uri %q, id %s); encoding/json reads no digest", s.Digest, msg, uri, id)
			}
			if d != s.Digest || int64(n) != s.Size {
				t.Fatalf("readScan read %s %d from %q; encoding/json %s %d", s.Digest, s.Size, msg, d, n)
			}
		}
	})
}
