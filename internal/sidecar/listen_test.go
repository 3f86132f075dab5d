package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// modernChurnUpstream is a go-sdk upstream on the 2026-07-28 wire
// (stateless) that adds a tool every few milliseconds, so a listen stream
// asking for toolsListChanged carries the upstream's own notifications all
// the time. refuse makes it answer subscriptions/listen as a server without
// it would: "-32601" (Method not found, as JSON) or "404" (HTTP).
func modernChurnUpstream(t *testing.T, refuse string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	inner := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := listenRequest(r); ok && refuse != "" {
			if refuse == "404" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, id)
			return
		}
		inner.ServeHTTP(w, r)
	})
	return serveChurning(t, s, h)
}

// listenRequest reports whether r posts subscriptions/listen, and its raw
// id; r's body stays readable.
func listenRequest(r *http.Request) (id json.RawMessage, ok bool) {
	if r.Method != http.MethodPost {
		return nil, false
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "subscriptions/listen" {
		return nil, false
	}
	return m.ID, true
}

// modernMeta (era_test.go) is the per-request _meta of the 2026-07-28 wire.

// openListen posts subscriptions/listen with request id (raw JSON) and
// filter (a SubscriptionFilter object), and returns the stream's events.
func openListen(t *testing.T, ctx context.Context, endpoint, id, filter string) <-chan sseEvent {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{` + modernMeta + `,"notifications":` + filter + `}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", modernVersion)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	return eventsOf(t, req, "subscriptions/listen")
}

// listenMsg is one message on a listen stream, as the schema shapes it.
type listenMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications map[string]json.RawMessage `json:"notifications"`
	} `json:"params"`
}

func decodeListen(t *testing.T, ev sseEvent) listenMsg {
	t.Helper()
	var m listenMsg
	if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
		t.Fatalf("an event is not one whole JSON-RPC message: %q", ev.data)
	}
	return m
}

// listenAck reads the stream's first event, which must be the
// acknowledgement carrying subID, and returns its filter.
func listenAck(t *testing.T, events <-chan sseEvent, subID string) map[string]json.RawMessage {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the listen stream ended before its acknowledgement")
		}
		m := decodeListen(t, ev)
		if m.Method != "notifications/subscriptions/acknowledged" || string(m.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != subID {
			t.Fatalf("first event %q, want the acknowledgement with subscriptionId %s", ev.data, subID)
		}
		return m.Params.Notifications
	case <-time.After(10 * time.Second):
		t.Fatal("no acknowledgement")
	}
	return nil
}

// listenNotices reads a listen stream for d and returns the methods of the
// sidecar's own notifications on it, checking that every event is one
// whole message whose _meta subscriptionId is subID, and counting the
// upstream's tools/list_changed.
func listenNotices(t *testing.T, events <-chan sseEvent, d time.Duration, subID string, upstreamSeen *int) []string {
	t.Helper()
	var got []string
	eachEvent(t, events, d, "listen", func(ev sseEvent) {
		m := decodeListen(t, ev)
		if s := string(m.Params.Meta["io.modelcontextprotocol/subscriptionId"]); s != subID {
			t.Fatalf("event %q carries subscriptionId %q, want %s", ev.data, s, subID)
		}
		switch m.Method {
		case "notifications/tools/list_changed":
			*upstreamSeen++
		case "notifications/resources/list_changed", "notifications/agents/list_changed", "notifications/resources/updated":
			if ev.hasID {
				t.Fatalf("a sidecar notification has an id: %+v", ev)
			}
			got = append(got, m.Method)
		default:
			t.Fatalf("unexpected event on the listen stream: %q", ev.data)
		}
	})
	return got
}

// TestPluginChangeNotifiesListenStreams: a modern client holding
// subscriptions/listen through the sidecar hears of a plugin change (the
// kubelet's ..data swap) once, with its subscriptionId, between the
// upstream's own notifications, whether the upstream serves listen itself
// or not at all; a listen that did not ask hears nothing of the sidecar's.
func TestPluginChangeNotifiesListenStreams(t *testing.T) {
	t.Parallel()
	for _, refuse := range []string{"", "-32601", "404"} {
		t.Run("upstream listen refused "+refuse, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			root := filepath.Join(t.TempDir(), "plugin")
			v1, v2 := notesPlugin()
			swap := kubeletPlugin(t, root, v1)
			endpoint := startFolder(t, modernChurnUpstream(t, refuse), root, polled)

			const subA = `"listen-A"`
			a := openListen(t, ctx, endpoint, subA, `{"toolsListChanged":true,"resourcesListChanged":true,"agentsListChanged":true}`)
			ack := listenAck(t, a, subA)
			if string(ack["resourcesListChanged"]) != "true" || string(ack["agentsListChanged"]) != "true" {
				t.Fatalf("acknowledgement %v lacks what the sidecar honours", ack)
			}
			if tools := string(ack["toolsListChanged"]) == "true"; tools != (refuse == "") {
				t.Fatalf("acknowledgement %v: toolsListChanged %v, want it only from an upstream with listen", ack, tools)
			}
			// A listen that asked only for the upstream's tools: the
			// sidecar honours nothing of it and sends nothing on it.
			const subB = `7`
			var b <-chan sseEvent
			if refuse == "" {
				b = openListen(t, ctx, endpoint, subB, `{"toolsListChanged":true}`)
				if ackB := listenAck(t, b, subB); len(ackB) != 1 || string(ackB["toolsListChanged"]) != "true" {
					t.Fatalf("acknowledgement of a tools-only listen %v, want toolsListChanged alone", ackB)
				}
			}
			// A listen asking only for what the sidecar honours: a go-sdk
			// upstream acknowledges nothing and ends its stream at once; the
			// sidecar keeps it open for its own notifications.
			const subC = `"C"`
			var c <-chan sseEvent
			if refuse == "" {
				c = openListen(t, ctx, endpoint, subC, `{"agentsListChanged":true}`)
				if ackC := listenAck(t, c, subC); len(ackC) != 1 || string(ackC["agentsListChanged"]) != "true" {
					t.Fatalf("acknowledgement of an agents-only listen %v, want agentsListChanged alone", ackC)
				}
			}
			quiet := func(d time.Duration, what string) {
				t.Helper()
				var up int
				if n := listenNotices(t, a, d, subA, &up); len(n) > 0 {
					t.Fatalf("%s sent %q", what, n)
				}
			}
			upstream, upB := 0, 0
			if refuse == "" {
				for upstream < 3 {
					if n := listenNotices(t, a, 50*time.Millisecond, subA, &upstream); len(n) > 0 {
						t.Fatalf("notifications before any change: %q", n)
					}
				}
			} else {
				quiet(300*time.Millisecond, "the stream before any change")
			}

			swap(v1)
			quiet(800*time.Millisecond, "an unchanged reload")
			if err := os.Rename(root, root+".away"); err != nil {
				t.Fatal(err)
			}
			quiet(800*time.Millisecond, "a failed reload")
			if err := os.Rename(root+".away", root); err != nil {
				t.Fatal(err)
			}
			quiet(800*time.Millisecond, "a reload after the failed one, with nothing changed")

			before := upstream
			swap(v2)
			got := noticesUntil(t, 2, func(d time.Duration) []string { return listenNotices(t, a, d, subA, &upstream) })
			if want := "notifications/resources/list_changed notifications/agents/list_changed"; strings.Join(got, " ") != want {
				t.Fatalf("after the change the stream carried %q, want %q once each", got, want)
			}
			if n := listenNotices(t, a, 500*time.Millisecond, subA, &upstream); len(n) > 0 {
				t.Fatalf("a duplicate after the change: %q", n)
			}
			if refuse == "" && upstream == before {
				t.Error("no upstream event went by during the change: nothing shows the notifications came between them")
			}
			if b != nil {
				if n := listenNotices(t, b, 100*time.Millisecond, subB, &upB); len(n) > 0 {
					t.Errorf("the tools-only listen got the sidecar's %q", n)
				}
				if upB == 0 {
					t.Error("the tools-only listen carried none of the upstream's notifications")
				}
			}
			if c != nil {
				var none int
				n := noticesUntil(t, 1, func(d time.Duration) []string { return listenNotices(t, c, d, subC, &none) })
				if n = append(n, listenNotices(t, c, 100*time.Millisecond, subC, &none)...); strings.Join(n, " ") != "notifications/agents/list_changed" {
					t.Errorf("the agents-only listen got %q, want agents/list_changed once", n)
				}
			}
			status, _, body := sidecartest.Call(t, endpoint, `{"jsonrpc":"2.0","id":5,"method":"skills/list","params":{`+modernMeta+`}}`,
				map[string]string{"MCP-Protocol-Version": modernVersion, "Mcp-Method": "skills/list"})
			if status != http.StatusOK || !strings.Contains(body, "skill://review/SKILL.md") {
				t.Errorf("skills/list after the notification = HTTP %d %s, want the new skill", status, body)
			}
		})
	}
}

// earlyNoticeUpstream is a go-sdk upstream (stateless, 2026-07-28) whose
// subscriptions/listen stream is written by hand, in the orders go-sdk
// v1.8.0 itself produces when a tool is added as a listen opens: a
// tools/list_changed without a subscriptionId (its broadcast to a session
// it does not yet know is modern), one of the subscription (it registers
// the listen before it acknowledges it), then the acknowledgement, then
// another of the subscription; the stream stays open until the client
// leaves. bom starts the stream with a UTF-8 byte order mark, which the SSE
// rules allow there.
func earlyNoticeUpstream(t *testing.T, bom bool) string {
	t.Helper()
	return listenUpstream(t, func(w http.ResponseWriter, meta string) {
		notice := `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{` + meta + `}}` + "\n\n"
		if bom {
			_, _ = io.WriteString(w, "\xef\xbb\xbf")
		}
		_, _ = io.WriteString(w, `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`+"\n\n")
		_, _ = io.WriteString(w, notice)
		_, _ = io.WriteString(w, `data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{`+meta+`,"notifications":{"toolsListChanged":true}}}`+"\n\n")
		_, _ = io.WriteString(w, notice)
	})
}

// listenUpstream starts a stateless go-sdk upstream whose
// subscriptions/listen requests stream is left to write: it is handed
// the stream's writer, the event stream's head already set, and the
// request's _meta member naming the subscription; the stream stays open
// until the client leaves. It returns the upstream's MCP endpoint.
func listenUpstream(t *testing.T, stream func(w http.ResponseWriter, meta string)) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{HasTools: true})
	inner := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := listenRequest(r)
		if !ok {
			inner.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		stream(w, `"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(id)+`}`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestListenAcknowledgementComesFirst: the first message a client gets on a
// listen stream through the sidecar is the acknowledgement, even when the
// upstream sent notifications before its own; the one of the subscription
// follows it, the one without its subscriptionId is not passed on (every
// event must carry it: listenNotices), and none of the subscription's is
// lost (with a BOM at the stream's start too, which must not land
// mid-stream). So for a listen the sidecar honours part of, and for one it
// honours nothing of (tools only), whose acknowledgement is the upstream's.
func TestListenAcknowledgementComesFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, filter string
		bom, ours    bool
	}{
		{"honoured", `{"toolsListChanged":true,"resourcesListChanged":true}`, false, true},
		{"honoured, BOM", `{"toolsListChanged":true,"resourcesListChanged":true}`, true, true},
		{"tools only", `{"toolsListChanged":true}`, false, false},
		{"tools only, BOM", `{"toolsListChanged":true}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			root := filepath.Join(t.TempDir(), "plugin")
			v1, _ := notesPlugin()
			kubeletPlugin(t, root, v1)
			endpoint := startFolder(t, earlyNoticeUpstream(t, tc.bom), root, func(c *config.Config) { c.AuthGate = "none" })
			const sub = `"early"`
			events := openListen(t, ctx, endpoint, sub, tc.filter)
			ack := listenAck(t, events, sub)
			if string(ack["toolsListChanged"]) != "true" || (string(ack["resourcesListChanged"]) == "true") != tc.ours {
				t.Errorf("acknowledgement %v, want the upstream's toolsListChanged, and the sidecar's resourcesListChanged only when asked", ack)
			}
			var upstream int
			sidecartest.WaitFor(t, time.Minute, func() bool {
				if n := listenNotices(t, events, 100*time.Millisecond, sub, &upstream); len(n) > 0 {
					t.Fatalf("the sidecar sent %q with nothing changed", n)
				}
				return upstream >= 2
			}, "the upstream's 2 tools/list_changed on the stream")
			if upstream != 2 {
				t.Errorf("the stream carried %d of the upstream's 2 tools/list_changed, want both", upstream)
			}
		})
	}
}

// TestListenAcknowledgementWithNullFilter: an upstream whose
// acknowledgement carries "notifications": null (read as no filter by
// go-sdk, which decodes null to the zero value, and by a JavaScript
// client's optional members) gets it to the client first, with what the
// sidecar honours merged in: it is the acknowledgement, not a message to
// hold until one comes. A notification of the subscription follows, so the
// stream has something after it either way.
func TestListenAcknowledgementWithNullFilter(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	upstream := listenUpstream(t, func(w http.ResponseWriter, meta string) {
		_, _ = io.WriteString(w, `data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{`+meta+`,"notifications":null}}`+"\n\n")
		_, _ = io.WriteString(w, `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{`+meta+`}}`+"\n\n")
	})
	root := filepath.Join(t.TempDir(), "plugin")
	v1, _ := notesPlugin()
	kubeletPlugin(t, root, v1)
	endpoint := startFolder(t, upstream, root, func(c *config.Config) { c.AuthGate = "none" })
	const sub = `"nullfilter"`
	events := openListen(t, ctx, endpoint, sub, `{"resourcesListChanged":true}`)
	if ack := listenAck(t, events, sub); string(ack["resourcesListChanged"]) != "true" {
		t.Errorf("acknowledgement %v, want the sidecar's resourcesListChanged merged in", ack)
	}
}
