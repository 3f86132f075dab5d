package proxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// testMaxEvent is the --max-event-bytes of limitedSidecar: small, so that a
// reply just past it is cheap to build.
const testMaxEvent = 4096

// limitedSidecar serves h as the upstream behind a sidecar whose parse limit
// (MaxEventBytes) is testMaxEvent, and returns the sidecar's URL.
func limitedSidecar(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	uu, _ := url.Parse(up.URL)
	p, err := proxy.New(proxy.Options{Upstream: uu, Declaration: rewrite.SkillsSidecar(), MaxEventBytes: testMaxEvent})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)
	return side.URL
}

// padded returns head + a JSON string member "pad" + "}}", exactly n bytes
// long; head must end inside an object, after a member.
func padded(head string, n int) string {
	const open, tail = `,"pad":"`, `"}}`
	return head + open + strings.Repeat("x", n-len(head)-len(open)-len(tail)) + tail
}

// TestOversizedJSONReplyRefused: a JSON reply the sidecar must parse to
// rewrite (a handshake, alone or in a batch) that is larger than
// --max-event-bytes is refused with 502 and data.reason
// upstream_message_too_large, echoing the request's id; one at the limit is
// rewritten, and a reply the sidecar does not parse passes whatever its size.
func TestOversizedJSONReplyRefused(t *testing.T) {
	t.Parallel()
	const initHead = `{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"u","version":"1"}`
	const discoverReq = `{"jsonrpc":"2.0","id":"d-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	const discoverHead = `{"jsonrpc":"2.0","id":"d-1","result":{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"u","version":"1"}`
	const toolsHead = `{"jsonrpc":"2.0","id":9,"result":{"tools":[]`
	tests := []struct {
		name, req, reply string
		status           int    // of the reply the client gets
		id               string // echoed in the error; "" for a success
		passed           bool   // the upstream's bytes reach the client as they were
	}{
		{name: "initialize over the limit", req: initReq, reply: padded(initHead, testMaxEvent+1), status: http.StatusBadGateway, id: "7"},
		{name: "server/discover over the limit", req: discoverReq, reply: padded(discoverHead, testMaxEvent+1), status: http.StatusBadGateway, id: `"d-1"`},
		{name: "batch with initialize over the limit", req: "[" + initReq + "]", reply: "[" + padded(initHead, testMaxEvent-1) + "]", status: http.StatusBadGateway, id: "null"},
		{name: "initialize at the limit", req: initReq, reply: padded(initHead, testMaxEvent), status: http.StatusOK},
		{name: "tools/list is not parsed", req: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, reply: padded(toolsHead, 4*testMaxEvent), status: http.StatusOK, passed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := limitedSidecar(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.reply)
			})
			resp, b := sidecartest.Post(t, u, tt.req, nil)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d (body %.200s)", resp.StatusCode, tt.status, b)
			}
			switch {
			case tt.id != "":
				e := decodeErr(t, b)
				if e.Error.Code != reply.CodeInternalError || string(e.ID) != tt.id || e.Error.Data["reason"] != "upstream_message_too_large" {
					t.Errorf("error = id %s code %d data %v, want id %s code %d reason upstream_message_too_large",
						e.ID, e.Error.Code, e.Error.Data, tt.id, reply.CodeInternalError)
				}
			case tt.passed:
				if string(b) != tt.reply {
					t.Errorf("reply of %d bytes changed on its way (got %d bytes)", len(tt.reply), len(b))
				}
			default:
				if !strings.Contains(string(b), `"io.modelcontextprotocol/skills"`) {
					t.Errorf("reply at the limit = %.200s…, want the declaration spliced in", b)
				}
			}
		})
	}
}

// TestOversizedSSEEventEndsStream: an SSE event larger than --max-event-bytes
// in a stream the sidecar parses ends the client's stream loudly (docs/security.md,
// Limits): the events before it arrive whole, then the reply is cut (no
// clean end, so the client cannot mistake it for a complete stream), and not
// one byte of the oversized event is passed on. A stream the sidecar does
// not parse carries the same event untouched, and the sidecar serves the
// next request as before.
func TestOversizedSSEEventEndsStream(t *testing.T) {
	t.Parallel()
	const first = "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
	big := "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"" + strings.Repeat("y", testMaxEvent) + "\"}}\n\n"
	const reply = "id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"}}}\n\n"
	u := limitedSidecar(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get("X-Test-Big") == "" {
			_, _ = io.WriteString(w, reply)
			return
		}
		_, _ = io.WriteString(w, first)
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, big+reply)
	})
	send := func(method, body string, hdr map[string]string) (*http.Response, []byte, error) {
		t.Helper()
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}

	tests := []struct {
		name, method, body string
		hdr                map[string]string
	}{
		{"POST initialize", http.MethodPost, initReq, map[string]string{"X-Test-Big": "1"}},
		{"GET resumed after Last-Event-ID", http.MethodGet, "", map[string]string{"X-Test-Big": "1", "Last-Event-ID": "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got, err := send(tt.method, tt.body, tt.hdr)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status = %d, want 200 (the stream had begun)", resp.StatusCode)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("reading the stream ended with %v, want %v: a cut, not a clean end", err, io.ErrUnexpectedEOF)
			}
			if string(got) != first {
				t.Errorf("client got %.300q, want exactly the event before the oversized one, %q", got, first)
			}
		})
	}

	t.Run("stream not parsed", func(t *testing.T) {
		_, got, err := send(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, map[string]string{"X-Test-Big": "1"})
		if err != nil || string(got) != first+big+reply {
			t.Errorf("tools/call stream = %d bytes, %v; want the upstream's %d bytes untouched", len(got), err, len(first+big+reply))
		}
	})

	t.Run("next request", func(t *testing.T) {
		resp, got, err := send(http.MethodPost, initReq, nil)
		if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(got), "id: 3\n") || !strings.Contains(string(got), `"io.modelcontextprotocol/skills"`) {
			t.Errorf("after an oversized event: status %d, %v, stream %q; want the initialize reply with the declaration", resp.StatusCode, err, got)
		}
	})
}

// bodyLimitedProxy is a proxy holding bodies to limit in front of an
// upstream that sends every body it receives on got.
func bodyLimitedProxy(t *testing.T, limit int64) (*proxy.Proxy, chan string) {
	t.Helper()
	got := make(chan string, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(up.Close)
	uu, _ := url.Parse(up.URL)
	p, err := proxy.New(proxy.Options{Upstream: uu, MaxBodyBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	return p, got
}

// TestChunkedBodyLimit: a request body of undeclared length (chunked,
// RFC 9112 §7.1) is held to MaxBodyBytes as a declared one is: past the
// limit the caller gets 413 and the upstream nothing; within it the body
// reaches the upstream whole. A request pipelined behind the oversized one
// is either answered on its own (the chunked framing says where the first
// body ends) or not at all (the connection closed, RFC 9110 §15.5.14):
// never read out of the first body's bytes.
func TestChunkedBodyLimit(t *testing.T) {
	const limit = 256
	p, got := bodyLimitedProxy(t, limit)
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)

	chunked := func(body string) string {
		half := len(body) / 2
		return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strconv.FormatInt(int64(half), 16) + "\r\n" + body[:half] + "\r\n" +
			strconv.FormatInt(int64(len(body)-half), 16) + "\r\n" + body[half:] + "\r\n0\r\n\r\n"
	}
	small := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`
	big := padded(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"`, limit+1)

	conn, err := net.DialTimeout("tcp", side.Listener.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, chunked(small)+chunked(big)+chunked(small)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	next := func() (*http.Response, string, error) {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}

	resp, _, err := next()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a chunked body within the limit: %v, %v; want 200", resp, err)
	}
	if b := <-got; b != small {
		t.Errorf("the upstream got %q, want %q", b, small)
	}
	resp, b, err := next()
	if err != nil {
		t.Fatalf("a chunked body past the limit: no reply (%v)", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(b, "-32600") {
		t.Errorf("a chunked body of %d bytes past a limit of %d: status %d, body %s; want 413 with -32600", len(big), limit, resp.StatusCode, b)
	}
	resp, _, err = next()
	switch {
	case err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		// Closed after the 413: the pipelined request is the client's to retry.
	case err != nil:
		t.Errorf("after the 413: %v; want the next reply or the connection closed", err)
	case resp.StatusCode != http.StatusOK:
		t.Errorf("the request pipelined behind the oversized one: status %d, want 200", resp.StatusCode)
	}
	close(got)
	for b := range got {
		if b != small {
			t.Errorf("the upstream got %q (%d bytes), want only the small body", b, len(b))
		}
	}
}
