package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lyingServer serves what the fake serves, with each reply's bytes passed
// through lie first: a server whose replies a member written in another
// case, or twice, makes read one way by a client that matches member names
// exactly (go-sdk v1.8.0's decoder, JSON.parse in a TypeScript client: the
// exact name, the last of duplicates) and another by one that folds them.
type lyingServer struct {
	fake *fakeServer
	lie  func(method string, params map[string]any, reply string) string
}

func (l *lyingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var req struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	_ = json.Unmarshal(body, &req)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	l.fake.ServeHTTP(rec, r)
	out := rec.Body.String()
	if rec.Code == http.StatusOK && l.lie != nil {
		out = l.lie(req.Method, req.Params, out)
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = io.WriteString(w, out)
}

// jsonString is s as encoding/json writes it (the fake's encoder).
func jsonString(s string) string {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// replaceOnce replaces old with new in s and panics if old is absent, so a
// lie that no longer applies cannot pass silently.
func replaceOnce(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("lie does not apply: " + old + " not in " + s)
	}
	return strings.Replace(s, old, new, 1)
}

const dupMD = "skill://acme/billing/refunds/examples/dup.md"

// goSDKRead is the text a go-sdk v1.8.0 client reads from uri at url.
func goSDKRead(t *testing.T, url, uri string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatalf("go-sdk connect: %v", err)
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("go-sdk resources/read %s: %v", uri, err)
	}
	return res.Contents[0].Text
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestReadsMemberNamesExactly: where a reply's member is written again in
// another case after it, a client reads the exact name (go-sdk's decoder
// with case-insensitive matching off; JSON.parse), so verify must judge
// what that member says. Each lie makes a folding reader see a conformant
// server where a client sees a broken one; verify must fail the check
// that exists for the broken thing.
func TestReadsMemberNamesExactly(t *testing.T) {
	t.Parallel()
	const served = "# Duplicate\n\nnot the listed bytes\n"
	listed := newFake().files[dupMD].text
	isRead := func(m string, p map[string]any) bool { return m == "resources/read" && p["uri"] == dupMD }
	tests := map[string]struct {
		lie    func(method string, p map[string]any, reply string) string
		era    string
		item   string
		check  string
		goSDK  bool // a go-sdk client reads dup.md from the lying server
		before func(f *fakeServer)
	}{
		// The client hashes served; a folding reader takes Text, the
		// listed bytes.
		"Text after text": {
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				return replaceOnce(reply, `"text":`+jsonString(listed), `"text":`+jsonString(served)+`,"Text":`+jsonString(listed))
			},
			item: refunds, check: "files.digest", goSDK: true,
		},
		"Result after result": {
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				i := strings.Index(reply, `"result":`)
				orig := strings.TrimSuffix(strings.TrimSpace(reply[i+len(`"result":`):]), "}")
				mine := `{"contents":[{"uri":"` + dupMD + `","mimeType":"text/markdown","text":` + jsonString(served) + `}]}`
				return reply[:i] + `"result":` + mine + `,"Result":` + orig + "}\n"
			},
			item: refunds, check: "files.digest", goSDK: true,
		},
		// A client reads the result, a skill, where a folding reader
		// reads the -32602 the spec asks for.
		"Error beside result": {
			lie: func(m string, p map[string]any, reply string) string {
				if m != "skills/get" || p["uri"] != unknownSkill {
					return reply
				}
				i := strings.Index(reply, `"error":`)
				return reply[:i] + `"result":{"skill":{}},"Error":` + strings.TrimSuffix(strings.TrimSpace(reply[i+len(`"error":`):]), "}") + "}\n"
			},
			check: "skills.get.unknown",
		},
		"Code after code": {
			lie: func(m string, p map[string]any, reply string) string {
				if m != "skills/get" || p["uri"] != unknownSkill {
					return reply
				}
				return replaceOnce(reply, `"code":-32602`, `"code":-32603,"Code":-32602`)
			},
			check: "skills.get.unknown",
		},
		// A client matches the reply to its request by id and finds none.
		"ID after id": {
			lie: func(m string, p map[string]any, reply string) string {
				if m != "skills/get" || p["uri"] != notes {
					return reply
				}
				i := strings.Index(reply, `"id":`)
				j := i + strings.IndexByte(reply[i:], ',')
				return reply[:i] + `"id":987654,"ID":` + reply[i+len(`"id":`):j] + reply[j:]
			},
			item: notes, check: "skills.get",
		},
		"ResultType after resultType": {
			lie: func(m string, p map[string]any, reply string) string {
				if m != "skills/list" {
					return reply
				}
				return replaceOnce(reply, `"resultType":"complete"`, `"resultType":"incomplete","ResultType":"complete"`)
			},
			era: EraModern, check: "skills.list.cache",
		},
		"Reason after reason": {
			lie: func(m string, p map[string]any, reply string) string {
				if m != "agents/get" || p["name"] != unknownAgent {
					return reply
				}
				return replaceOnce(reply, `"reason":"agent_not_found"`, `"reason":"other","Reason":"agent_not_found"`)
			},
			check: "agents.get.unknown",
		},
		// A client sees no extensions declared.
		"Capabilities after capabilities": {
			lie: func(m string, p map[string]any, reply string) string {
				if m != "initialize" {
					return reply
				}
				i := strings.Index(reply, `"capabilities":`)
				return reply[:i] + `"capabilities":{"resources":{}},"Capabilities":` + reply[i+len(`"capabilities":`):]
			},
			era: EraLegacy, check: "declaration.skills",
		},
		"URI after uri in a directory listing": {
			lie: func(m string, p map[string]any, reply string) string {
				if m != "resources/directory/read" || p["uri"] != "skill://notes" {
					return reply
				}
				return replaceOnce(reply, `"uri":"skill://notes/SKILL.md"`, `"uri":"skill://notes/README.md","URI":"skill://notes/SKILL.md"`)
			},
			item: notes, check: "directory.read",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			url := newHTTPServer(t, &lyingServer{fake: f, lie: tt.lie})
			if tt.goSDK {
				// The premise: a real client reads bytes the listed digest
				// does not cover.
				if got := goSDKRead(t, url, dupMD); sha(got) == sha(listed) || got != served {
					t.Fatalf("go-sdk client reads %q, want %q", got, served)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rep := Verify(ctx, Options{URL: url, Era: tt.era})
			// Each lie is also a reply read two ways, which fails at the
			// read whatever the check after it (TestFailsRepliesReadTwoWays).
			c, ok := findCheck(rep, tt.item, tt.check)
			if (!ok || c.Status != StatusFail) && !failedTwoWays(rep) || rep.ExitCode != ExitNonconformant {
				t.Errorf("check %s of %q: %+v (found %t), exit %d; want fail, exit 1\n%s", tt.check, tt.item, c, ok, rep.ExitCode, textOf(t, rep))
			}
		})
	}
}

// failedTwoWays reports whether a check of rep failed because clients
// could read a reply two ways.
func failedTwoWays(rep *Report) bool {
	for _, list := range append([][]Check{rep.Server}, itemChecks(rep)...) {
		for _, c := range list {
			if c.Status == StatusFail && strings.Contains(c.Reason, "clients could read the reply two ways") {
				return true
			}
		}
	}
	return false
}

func itemChecks(rep *Report) [][]Check {
	var out [][]Check
	for _, it := range append(append([]*Item{}, rep.Skills...), rep.Agents...) {
		out = append(out, it.Checks)
	}
	return out
}

// TestDecodeReadsExactNames holds the readings themselves to exact names,
// the last of duplicates counting (go-sdk's decoder, JSON.parse), apart
// from the two-ways verdict that fails such a reply first.
func TestDecodeReadsExactNames(t *testing.T) {
	t.Parallel()
	c, data, err := decodeContent(json.RawMessage(`{"contents":[{"uri":"u","text":"a","Text":"b","URI":"v","mimeType":"x","MimeType":"y"}],"Contents":[]}`), "u")
	if err != nil || string(data) != "a" || c.MIMEType != "x" {
		t.Errorf("decodeContent = %+v, %q, %v; want text \"a\", mimeType \"x\"", c, data, err)
	}
	_, data, err = decodeContent(json.RawMessage(`{"contents":[{"uri":"u","text":"a","text":"b"}]}`), "u")
	if err != nil || string(data) != "b" {
		t.Errorf("decodeContent of text twice = %q, %v; want the last, \"b\"", data, err)
	}
	m, err := decodeMessage([]byte(`{"jsonrpc":"2.0","JSONRPC":"1.0","id":1,"ID":2,"result":{"a":1},"Result":null,"Error":{"code":1,"message":"m"}}`))
	if err != nil || string(m.ID) != "1" || string(m.Result) != `{"a":1}` || m.Error != nil {
		t.Errorf("decodeMessage = %+v, %v; want id 1, the result, no error", m, err)
	}
	m, err = decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"Code":1,"message":"m","Message":"n"}}`))
	if err != nil || m.Error == nil || m.Error.Code != -32602 || m.Error.Message != "m" {
		t.Errorf("decodeMessage = %+v, %v; want error -32602 \"m\"", m, err)
	}
	if p := cacheProblem(json.RawMessage(`{"ResultType":"complete","TTLMs":0,"CacheScope":"public"}`)); p == "" {
		t.Error("cacheProblem took ResultType, TTLMs and CacheScope for the cache fields")
	}
}

// foldingText is the text a client that decodes with encoding/json into
// structs (names matched in any case, the last spelling winning) takes
// from a resources/read reply.
func foldingText(t *testing.T, reply string) string {
	t.Helper()
	var m struct {
		Result struct {
			Contents []struct{ Text string }
		}
	}
	if err := json.Unmarshal([]byte(reply), &m); err != nil || len(m.Result.Contents) == 0 {
		t.Fatalf("folding reader: %v", err)
	}
	return m.Result.Contents[0].Text
}

// TestFailsRepliesReadTwoWays: a reply that clients read two ways is one
// whose digest some client cannot reproduce, however the verifier reads
// it, so verify fails it. Each lie leaves what go-sdk's client reads
// equal to the listing (so reading exactly alone would pass it) and makes
// another client read something else: one that matches names in any case
// (encoding/json structs), one that keeps the first of duplicates, the
// WHATWG decoder a TypeScript client reads its body with (one U+FFFD per
// maximal subpart of bytes that are not UTF-8, where Go puts one per
// byte), Python (which keeps an escaped lone surrogate and cannot encode
// it as UTF-8).
func TestFailsRepliesReadTwoWays(t *testing.T) {
	t.Parallel()
	listedText := newFake().files[dupMD].text
	isRead := func(m string, p map[string]any) bool { return m == "resources/read" && p["uri"] == dupMD }
	const other = "# Duplicate\n\nother bytes\n"
	tests := map[string]struct {
		lie     func(method string, p map[string]any, reply string) string
		setText string // dup.md's text as the fake lists and serves it
		item    string
		check   string
		// folding: a folding reader of dup.md's reply reads other.
		folding bool
	}{
		"Text beside text": {
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				return replaceOnce(reply, `"text":`+jsonString(listedText), `"text":`+jsonString(listedText)+`,"Text":`+jsonString(other))
			},
			item: refunds, check: "files.read", folding: true,
		},
		"text written twice": {
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				return replaceOnce(reply, `"text":`+jsonString(listedText), `"text":`+jsonString(other)+`,"text":`+jsonString(listedText))
			},
			item: refunds, check: "files.read",
		},
		"text beside blob": {
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				return replaceOnce(reply, `"text":`, `"blob":"b3RoZXI=","text":`)
			},
			item: refunds, check: "files.read",
		},
		"Digest beside digest in the listing": {
			lie: func(m string, p map[string]any, reply string) string {
				if (m != "skills/list" && m != "skills/get") || !strings.Contains(reply, dupMD) {
					return reply
				}
				return replaceOnce(reply, `"digest":`, `"Digest":"sha256:`+hex64('a')+`","digest":`)
			},
			check: "skills.list",
		},
		"size written twice in the listing": {
			lie: func(m string, p map[string]any, reply string) string {
				if (m != "skills/list" && m != "skills/get") || !strings.Contains(reply, dupMD) {
					return reply
				}
				return replaceOnce(reply, `"size":`, `"size":1,"size":`)
			},
			check: "skills.list",
		},
		// Go reads E2 82 as two U+FFFD, the listed bytes; Node as one.
		"text with bytes that are not UTF-8": {
			setText: "a\uFFFD\uFFFDb",
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				return replaceOnce(reply, "a\uFFFD\uFFFDb", "a\xe2\x82b")
			},
			item: refunds, check: "files.read",
		},
		// Go reads \ud800 as U+FFFD, the listed bytes; Python keeps it.
		"text with an escaped lone surrogate": {
			setText: "a\uFFFDb",
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				return replaceOnce(reply, "a\uFFFDb", `a\ud800b`)
			},
			item: refunds, check: "files.read",
		},
		// Control: a surrogate pair written escaped is one character to
		// every client.
		"text with an escaped surrogate pair": {
			setText: "a\U0001F600b",
			lie: func(m string, p map[string]any, reply string) string {
				if !isRead(m, p) {
					return reply
				}
				return replaceOnce(reply, "a\U0001F600b", `a\ud83d\ude00b`)
			},
			item: refunds, check: "files.read",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			if tt.setText != "" {
				f.files[dupMD] = fakeFile{text: tt.setText, mime: "text/markdown"}
				f.skills[0] = f.entry(refunds, f.skills[0]["frontmatter"].(map[string]any))
			}
			want := f.files[dupMD].text
			var lastRead string
			url := newHTTPServer(t, &lyingServer{fake: f, lie: func(m string, p map[string]any, reply string) string {
				out := tt.lie(m, p, reply)
				if isRead(m, p) {
					lastRead = out
				}
				return out
			}})
			// The premise: go-sdk's client reads the listed bytes.
			if got := goSDKRead(t, url, dupMD); got != want {
				t.Fatalf("go-sdk client reads %q, want the listed %q", got, want)
			}
			if tt.folding {
				if got := foldingText(t, lastRead); got != other {
					t.Fatalf("folding reader reads %q, want %q", got, other)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rep := Verify(ctx, Options{URL: url})
			c, ok := findCheck(rep, tt.item, tt.check)
			if strings.Contains(name, "surrogate pair") {
				if !ok || c.Status != StatusOK || rep.ExitCode != ExitOK {
					t.Errorf("check %s of %q: %+v (found %t), exit %d; want ok, exit 0\n%s", tt.check, tt.item, c, ok, rep.ExitCode, textOf(t, rep))
				}
				return
			}
			if !ok || c.Status != StatusFail || rep.ExitCode != ExitNonconformant {
				t.Errorf("check %s of %q: %+v (found %t), exit %d; want fail, exit 1\n%s", tt.check, tt.item, c, ok, rep.ExitCode, textOf(t, rep))
			}
		})
	}
}

// TestTwoWaysRule pins where the rule looks: names compared as decoded,
// free-form maps (metadata, _meta, a tool's schemas) holding data whose
// names differ in case, and escapes read as JSON reads them.
func TestTwoWaysRule(t *testing.T) {
	t.Parallel()
	for msg, twoWay := range map[string]bool{
		`{"a":{"text":"x"},"b":[{"text":"y"}]}`:                        false,
		`{"te\u0078t":"x","text":"y"}`:                                 true, // one name, escaped once
		`{"a":[{"uri":"u","URI":"v"}]}`:                                true,
		`{"a":{"metadata":{"Owner":"a","owner":"b"}}}`:                 false,
		`{"a":{"metadata":{"owner":"a","owner":"b"}}}`:                 true,
		`{"tools":[{"inputSchema":{"properties":{"id":{},"ID":{}}}}]}`: false,
		`{"tools":[{"inputSchema":{"properties":{"id":{},"id":{}}}}]}`: true,
		`{"a":"\\ud800"}`:              false, // a backslash, then "ud800"
		`{"a":"\ud83d\ude00"}`:         false,
		`{"a":"\ude00"}`:               true,
		`{"a":"\ud83d"}`:               true,
		`{"a":"\ud83dx"}`:              true,
		`{"a":"\"\ud800"}`:             true,
		"{\"a\":\"\xff\"}":             true,
		`{"K":1,"` + "\u212a" + `":2}`: true, // KELVIN SIGN folds to k
		`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","text":"a"}]}}`: false,
	} {
		if got := twoWays([]byte(msg)); (got != "") != twoWay {
			t.Errorf("twoWays(%s) = %q, want two ways %t", msg, got, twoWay)
		}
	}
}

// FuzzTwoWays: twoWays reads any bytes without failing, and of an object
// with two member names it finds them read two ways exactly when
// strings.EqualFold (the case-insensitive match of encoding/json's struct
// decoding, which folds the same way) says they are one name.
func FuzzTwoWays(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"a","Text":"b"}}`), "text", "Text")
	f.Add([]byte(`{"a":"\ud800"}`), "K", "\u212a") // Kelvin sign folds to k
	f.Add([]byte(strings.Repeat("[", 20000)), "s", "\u017f")
	f.Add([]byte(`{"_meta":{"id":1,"ID":2}}`), "a", "a")
	f.Fuzz(func(t *testing.T, b []byte, k1, k2 string) {
		_ = twoWays(b)
		if !utf8.ValidString(k1) || !utf8.ValidString(k2) {
			return
		}
		n1, _ := json.Marshal(k1)
		n2, _ := json.Marshal(k2)
		obj := []byte(`{` + string(n1) + `:1,` + string(n2) + `:2}`)
		if got, want := twoWays(obj) != "", strings.EqualFold(k1, k2); got != want {
			t.Fatalf("twoWays(%s) = %q; strings.EqualFold(%q, %q) = %v", obj, twoWays(obj), k1, k2, want)
		}
	})
}

// TestTwoWaysEndsOnBrokenJSON: a reply cut short inside an array ("[" and
// then a byte no JSON value starts with) is left to decodeMessage to
// report; the walk of its member names stopped at that byte for good while
// the array still seemed to go on, and verify never ended. Found by
// FuzzTwoWays.
func TestTwoWaysEndsOnBrokenJSON(t *testing.T) {
	for _, b := range []string{"[\x00", "[[1,\x00", `{"a":[` + "\x00", "[" + strings.Repeat("[", 20000)} {
		done := make(chan string, 1)
		go func() { done <- twoWays([]byte(b)) }()
		select {
		case got := <-done:
			if got != "" {
				t.Errorf("twoWays(%.20q) = %q, want \"\" (decodeMessage reports what does not decode)", b, got)
			}
		case <-time.After(10 * time.Second): // a hang guard only: it returns at once
			t.Fatalf("twoWays(%.20q) did not return", b)
		}
	}
}
