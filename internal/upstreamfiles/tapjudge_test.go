package upstreamfiles_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// TestTapReadsAsClientsDo: a raw upstream crafts the SSE reply to a
// forwarded resources/read of a skill file it serves (a byte order mark,
// ids spelled otherwise, events of another type, two replies, duplicate
// keys, data split across lines), a go-sdk client reads it through the
// sidecar, and a reader written from the SSE rules and the TypeScript
// SDK's matching (Number(id), first reply wins, events typed neither ""
// nor "message" ignored) reads the same bytes. Whatever the tap publishes
// is what every client that took a reply took; where they differ it
// publishes nothing. published says the tap must publish (the replies
// every client reads alike).
func TestTapReadsAsClientsDo(t *testing.T) {
	t.Parallel()
	snap, _ := sidecartest.BigSkill(t)
	reply := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"contents":[{"uri":"` + sidecartest.BigFileURI + `","mimeType":"text/plain","text":"` + text + `"}]}}`
	}
	ev := func(msg string) string { return "data: " + msg + "\n\n" }
	for name, tc := range map[string]struct {
		body      func(id string) string
		json      bool // application/json, not SSE
		published bool
	}{
		"one reply":              {body: func(id string) string { return ev(reply(id, "A")) }, published: true},
		"BOM, one reply":         {body: func(id string) string { return "\ufeff" + ev(reply(id, "A")) }, published: true},
		"BOM, two replies":       {body: func(id string) string { return "\ufeff" + ev(reply(id, "A")) + ev(reply(id, "B")) }},
		"id 1.0":                 {body: func(id string) string { return ev(reply(id+".0", "A")) }, published: true},
		"id 1.0, then id":        {body: func(id string) string { return ev(reply(id+".0", "A")) + ev(reply(id, "B")) }},
		"id as string, then id":  {body: func(id string) string { return ev(reply(`"`+id+`"`, "A")) + ev(reply(id, "B")) }},
		"id as hex string":       {body: func(id string) string { return ev(reply(fmt.Sprintf(`"0x%s"`, id), "A")) + ev(reply(id, "B")) }},
		"other event type, then": {body: func(id string) string { return "event: other\n" + ev(reply(id, "A")) + ev(reply(id, "B")) }, published: true},
		"other event type alone": {body: func(id string) string { return "event: other\n" + ev(reply(id, "A")) }},
		"type padded, then":      {body: func(id string) string { return "event:  message \n" + ev(reply(id, "A")) + ev(reply(id, "B")) }},
		"BOM before type, then":  {body: func(id string) string { return "\ufeffevent: other\n" + ev(reply(id, "A")) + ev(reply(id, "B")) }},
		"type message":           {body: func(id string) string { return "event: message\nid: 7\n" + ev(reply(id, "A")) }, published: true},
		"duplicate id key":       {body: func(id string) string { return ev(strings.Replace(reply(id, "A"), `"id":`, `"id":99,"id":`, 1)) }},
		"duplicate text key": {body: func(id string) string {
			return ev(strings.Replace(reply(id, "A"), `"text":"A"`, `"text":"B","text":"A"`, 1))
		}},
		"data split across lines": {body: func(id string) string {
			return "data: " + strings.Replace(reply(id, "A"), `,"result"`, "\ndata: ,\"result\"", 1) + "\n\n"
		}, published: true},
		"two equal replies": {body: func(id string) string { return ev(reply(id, "A")) + ev(reply(id, "A")) }},
		"bare CR framing":   {body: func(id string) string { return "data: " + reply(id, "A") + "\r\r" + ev(reply(id, "B")) }},
		"notification, then reply": {body: func(id string) string {
			return ev(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`) + ev(reply(id, "A"))
		}, published: true},
		"JSON with BOM": {json: true, body: func(id string) string { return "\ufeff" + reply(id, "A") }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var sent, sentID string
			up := httptest.NewServer(craftedUpstream(func(id string, judge bool) (string, string) {
				if !judge {
					// The sidecar's own reads are refused: a refusal
					// publishes nothing, so what is published below was
					// learned by the tap.
					return "application/json", `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"not for you"}}`
				}
				sent, sentID = tc.body(id), id
				if tc.json {
					return "application/json", sent
				}
				return "text/event-stream", sent
			}))
			t.Cleanup(up.Close)
			side, reg := overlaySidecarFor(t, up.URL, snap)

			goDigest, goOK := goSDKRead(t, side)
			tsDigest, tsOK := specRead(t, sent, sentID, tc.json)
			if counter(t, reg, "skills_sidecar_digest_refreshes_total") != 0 {
				t.Fatal("the sidecar learned the file by a read of its own")
			}
			published := counter(t, reg, "skills_sidecar_hashed_bytes_total") > 0
			if !published {
				if tc.published {
					t.Errorf("nothing published; go-sdk took %q (%v), the TypeScript reading %q (%v)", goDigest, goOK, tsDigest, tsOK)
				}
				return
			}
			var e struct {
				Skill entry `json:"skill"`
			}
			if err := json.Unmarshal(modernCall(t, side, "skills/get", map[string]any{"uri": "skill://big/SKILL.md"}), &e); err != nil {
				t.Fatal(err)
			}
			d := publishedDigest(t, e.Skill, sidecartest.BigFileURI)
			if goOK && goDigest != d || tsOK && tsDigest != d || !goOK && !tsOK {
				t.Errorf("published %s; go-sdk took %q (%v), the TypeScript reading %q (%v)", d, goDigest, goOK, tsDigest, tsOK)
			}
		})
	}
}

// craftedUpstream is a legacy streamable HTTP server written from the
// transport text: it lists sidecartest.BigFileURI, and answers a resources/read with
// what read returns for the raw id and whether the judge client sent it.
func craftedUpstream(read func(id string, judge bool) (contentType, body string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "crafted")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"resources":{}},"serverInfo":{"name":"crafted","version":"1"}}}`, req.ID)
		case "resources/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resources":[{"uri":%q,"name":"data"}]}}`, req.ID, sidecartest.BigFileURI)
		case "resources/templates/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resourceTemplates":[]}}`, req.ID)
		case "resources/read":
			ct, body := read(string(req.ID), r.Header.Get("X-Judge") != "")
			w.Header().Set("Content-Type", ct)
			_, _ = io.WriteString(w, body)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, req.ID)
		}
	}
}

// judgeHeader marks the judge client's requests for craftedUpstream.
type judgeHeader struct{}

func (judgeHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Judge", "1")
	return http.DefaultTransport.RoundTrip(r)
}

// goSDKRead reads sidecartest.BigFileURI through the sidecar with a go-sdk client (a
// legacy session) and returns the digest of the text it took, if any.
func goSDKRead(t *testing.T, side string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "judge", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: side, HTTPClient: &http.Client{Transport: judgeHeader{}}, DisableStandaloneSSE: true, MaxRetries: -1}
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("go-sdk connect through the sidecar: %v", err)
	}
	defer cs.Close()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: sidecartest.BigFileURI})
	if err != nil || len(res.Contents) != 1 {
		return "", false
	}
	return digestOf(res.Contents[0].Text), true
}

// specRead reads body as the SSE rules (WHATWG HTML §9.2.6) and the
// TypeScript SDK's client do: one leading BOM dropped, lines ended by CRLF,
// LF or CR, events typed neither "" nor "message" ignored, the first
// message whose Number(id) is the request's taken (the request's id is
// the go-sdk client's second, 1, after initialize's 0... compared by value
// below). A JSON body is decoded as a fetch Response's json() does (a BOM
// dropped).
func specRead(t *testing.T, body, id string, isJSON bool) (string, bool) {
	t.Helper()
	body = strings.TrimPrefix(body, "\ufeff")
	var msgs []string
	if isJSON {
		msgs = []string{body}
	} else {
		lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n"), "\n")
		var data []string
		typ := ""
		for _, line := range lines[:len(lines)-1] { // the last is unended
			if line == "" {
				if data != nil && (typ == "" || typ == "message") {
					msgs = append(msgs, strings.Join(data, "\n"))
				}
				data, typ = nil, ""
				continue
			}
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "data":
				data = append(data, value)
			case "event":
				typ = value
			}
		}
	}
	for _, m := range msgs {
		var msg map[string]json.RawMessage
		if json.Unmarshal([]byte(m), &msg) != nil {
			continue
		}
		if _, isReq := msg["method"]; isReq {
			continue
		}
		n, ok := upstreamfiles.IDNumber(msg["id"])
		if want, _ := upstreamfiles.IDNumber([]byte(id)); !ok || n != want {
			continue
		}
		var res struct {
			Contents []struct {
				Text string `json:"text"`
			} `json:"contents"`
		}
		if json.Unmarshal(msg["result"], &res) != nil || len(res.Contents) != 1 {
			return "", false
		}
		return digestOf(res.Contents[0].Text), true
	}
	return "", false
}

// TestResourcesListChangedDeclared: an upstream that declares resources
// without listChanged is declared with listChanged true through the
// sidecar (it sends notifications/resources/list_changed itself on a
// reload), as a go-sdk client reads the handshake.
func TestResourcesListChangedDeclared(t *testing.T) {
	t.Parallel()
	snap, _ := sidecartest.BigSkill(t)
	up := httptest.NewServer(craftedUpstream(func(id string, _ bool) (string, string) {
		return "application/json", `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"unused"}}`
	}))
	t.Cleanup(up.Close)
	side, _ := overlaySidecarFor(t, up.URL, snap)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "judge", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: side, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.ListChanged {
		t.Errorf("capabilities.resources through the sidecar: %+v, want listChanged true", caps.Resources)
	}
}
