package upstreamfiles_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// TestForwardedReadFaults: a forwarded read of an upstream-served catalog
// file is hashed as it passes (readWatch), and what it learned is published
// only when the reply ended whole and valid. The upstream here is written by
// hand from the JSON-RPC and streamable HTTP texts, one misbehaviour per
// case; in every case the client gets exactly the upstream's bytes, and
// skills_sidecar_hashed_bytes_total (which grows only when a verdict is
// published) tells whether one was.
func TestForwardedReadFaults(t *testing.T) {
	t.Parallel()
	snap, _ := sidecartest.BigSkill(t)
	data := bytes.Repeat([]byte("\x00\xfe\x7fskill"), 150000) // about 1 MiB
	blob := base64.StdEncoding.EncodeToString(data)
	text := strings.Repeat("line \"quoted\" \\ é\t😀\n", 40000) // escapes everywhere
	textJSON, _ := json.Marshal(text)
	result := func(id, body string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"contents":[{"uri":"` + sidecartest.BigFileURI + `","mimeType":"application/octet-stream",` + body + `}]}}`
	}
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"reading"}}`
	for name, tc := range map[string]struct {
		sse       bool
		reply     func(id string) string // the body, or for sse the events
		cut       int                    // >0: close the connection after this many body bytes
		published bool
		size      int
	}{
		"whole JSON":            {reply: func(id string) string { return result(id, `"blob":"`+blob+`"`) }, published: true, size: len(data)},
		"text split mid-escape": {reply: func(id string) string { return result(id, `"text":`+string(textJSON)) }, published: true, size: len(text)},
		"SSE notification first": {sse: true, reply: func(id string) string {
			return "event: message\ndata: " + note + "\n\n" + "data: " + result(id, `"blob":"`+blob+`"`) + "\r\n\r\n"
		}, published: true, size: len(data)},
		"extra bytes after reply": {reply: func(id string) string { return result(id, `"blob":"`+blob+`"`) + `{"jsonrpc":"2.0"}` }},
		"wrong id":                {reply: func(id string) string { return result(id+"0", `"blob":"`+blob+`"`) }},
		"invalid base64":          {reply: func(id string) string { return result(id, `"blob":"`+blob[:len(blob)/2]+"*"+blob[len(blob)/2+1:]+`"`) }},
		"early close mid-blob":    {reply: func(id string) string { return result(id, `"blob":"`+blob+`"`) }, cut: len(blob) / 2},
		"SSE two results": {sse: true, reply: func(id string) string {
			r := result(id, `"blob":"`+blob+`"`)
			return "data: " + r + "\n\ndata: " + r + "\n\n"
		}},
		"SSE result event unended": {sse: true, reply: func(id string) string { return "data: " + result(id, `"blob":"`+blob+`"`) + "\n" }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var sent string
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				w.Header().Set("Content-Type", "application/json")
				switch req.Method {
				case "resources/list":
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resources":[{"uri":%q,"name":"data"}]}}`, req.ID, sidecartest.BigFileURI)
					return
				case "resources/templates/list":
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resourceTemplates":[]}}`, req.ID)
					return
				case "resources/read":
				default:
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, req.ID)
					return
				}
				body := tc.reply(string(req.ID))
				sent = body
				if tc.sse {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				if tc.cut > 0 {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
					_, _ = io.WriteString(w, body[:tc.cut])
					w.(http.Flusher).Flush()
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						_ = conn.Close()
					}
					return
				}
				// Odd-sized writes, each flushed: the sidecar reads the
				// reply in pieces that cut escapes, runes and quads.
				for len(body) > 0 {
					k := min(4093, len(body))
					_, _ = io.WriteString(w, body[:k])
					w.(http.Flusher).Flush()
					body = body[k:]
				}
			}))
			t.Cleanup(up.Close)
			side, reg := overlaySidecarFor(t, up.URL, snap)
			req, _ := http.NewRequest(http.MethodPost, side, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+sidecartest.BigFileURI+`"}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", "s")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case tc.cut > 0:
				if rerr == nil {
					t.Errorf("a reply the upstream cut reached the client as a clean end (%d bytes)", len(got))
				}
			case rerr != nil || string(got) != sent:
				t.Errorf("client got %d bytes (%v), not the upstream's %d", len(got), rerr, len(sent))
			}
			hashed := counter(t, reg, "skills_sidecar_hashed_bytes_total")
			if tc.published && hashed != float64(tc.size) {
				t.Errorf("published %v hashed bytes, want the %d served", hashed, tc.size)
			}
			if tc.published {
				// The listing publishes what the read learned, with no read
				// of its own.
				want := digestOf(string(data))
				if name == "text split mid-escape" {
					want = digestOf(text)
				}
				probed := counter(t, reg, "skills_sidecar_digest_refreshes_total")
				var e struct {
					Skill entry `json:"skill"`
				}
				if err := json.Unmarshal(modernCall(t, side, "skills/get", map[string]any{"uri": "skill://big/SKILL.md"}), &e); err != nil {
					t.Fatal(err)
				}
				if d := publishedDigest(t, e.Skill, sidecartest.BigFileURI); d != want {
					t.Errorf("skills/get publishes %s for the file read, want %s", d, want)
				}
				if n := counter(t, reg, "skills_sidecar_digest_refreshes_total"); n != probed {
					t.Errorf("skills/get read the file again (%v reads) after a forwarded read learned it", n-probed)
				}
			}
			if !tc.published && hashed != 0 {
				t.Errorf("published a verdict (%v bytes hashed) from a reply that must publish nothing", hashed)
			}
		})
	}
}
