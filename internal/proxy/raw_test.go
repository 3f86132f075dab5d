package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/childproc"
	"github.com/skills-sidecar/skills-sidecar/internal/deadaddr"
	"github.com/skills-sidecar/skills-sidecar/internal/h1"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

const initReq = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

// rawUpstream serves h as the upstream and returns the sidecar's MCP URL.
func rawUpstream(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	return newSidecar(t, up.URL+"/upstream-path").URL + "/mcp"
}

func TestHeadersPassEndToEnd(t *testing.T) {
	t.Parallel()
	var got http.Header
	var gotHost, gotPath string
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		got, gotHost, gotPath = r.Header.Clone(), r.Host, r.URL.Path
		w.Header().Set("Mcp-Session-Id", "s-123")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	sent := map[string]string{
		"Authorization":        "Bearer secret",
		"Mcp-Session-Id":       "s-123",
		"MCP-Protocol-Version": "2025-11-25",
		"Mcp-Method":           "tools/call",
		"Mcp-Name":             "echo",
		"Last-Event-ID":        "e-9",
		"Traceparent":          "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"X-Custom":             "kept",
	}
	resp, _ := sidecartest.Post(t, u, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, headerOf(sent))
	for k, v := range sent {
		if g := got.Get(k); g != v {
			t.Errorf("upstream saw %s = %q, want %q", k, g, v)
		}
	}
	if !strings.HasPrefix(gotHost, "127.0.0.1:") {
		t.Errorf("upstream saw Host %q, want its own loopback host", gotHost)
	}
	if gotPath != "/upstream-path" {
		t.Errorf("upstream saw path %q, want the upstream URL's /upstream-path", gotPath)
	}
	if resp.Header.Get("Mcp-Session-Id") != "s-123" {
		t.Errorf("client saw Mcp-Session-Id %q, want s-123", resp.Header.Get("Mcp-Session-Id"))
	}
}

// sseUpstream replies to every POST with body as an SSE stream.
func sseUpstream(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}
}

func TestSSEBytesExact(t *testing.T) {
	t.Parallel()
	decl := `"extensions":{"io.modelcontextprotocol/skills":{"directoryRead":true},"io.modelcontextprotocol/agents":{"listChanged":true}}`
	tests := []struct {
		name, req, upstream, want string
	}{{
		name: "non-handshake reply is the identity",
		req:  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		upstream: ": keep-alive\r\nretry: 500\r\nid: a1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n" +
			"id: a2\rdata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\r\r",
	}, {
		name:     "initialize reply gets the declaration, CRLF, id and event kept",
		req:      initReq,
		upstream: ": hi\r\nid: p0\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{},\"resources\":{\"subscribe\":true}},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"},\"zzz\":1}}\r\n\r\n",
		want:     ": hi\r\nid: p0\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{},\"resources\":{\"subscribe\":true,\"listChanged\":true}," + decl + "},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"},\"zzz\":1}}\r\n\r\n",
	}, {
		name:     "initialize reply without resources gets resources too",
		req:      initReq,
		upstream: "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"}}}\n\n",
		want:     "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{" + decl + ",\"resources\":{\"listChanged\":true}},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"}}}\n\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := sidecartest.Post(t, rawUpstream(t, sseUpstream(tt.upstream)), tt.req, nil)
			want := tt.want
			if want == "" {
				want = tt.upstream
			}
			if string(got) != want {
				t.Errorf("client got\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestJSONAndBatchHandshake(t *testing.T) {
	t.Parallel()
	reply := `{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2025-03-26","capabilities":{"resources":{}},"serverInfo":{"name":"u","version":"1"}}}`
	spliced := `{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2025-03-26","capabilities":{"resources":{"listChanged":true},"extensions":{"io.modelcontextprotocol/skills":{"directoryRead":true},"io.modelcontextprotocol/agents":{"listChanged":true}}},"serverInfo":{"name":"u","version":"1"}}}`
	other := `{"jsonrpc":"2.0","id":8,"result":{"tools":[]}}`
	tests := []struct{ name, req, upstream, want string }{
		{"json", initReq, reply, spliced},
		{"batch", "[" + initReq + `,{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`, "[" + reply + ",\n " + other + "]", "[" + spliced + ",\n " + other + "]"},
		{"json non-handshake untouched", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, reply, reply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.upstream)
			})
			resp, got := sidecartest.Post(t, u, tt.req, nil)
			if string(got) != tt.want {
				t.Errorf("client got\n%s\nwant\n%s", got, tt.want)
			}
			if cl := resp.ContentLength; cl != int64(len(tt.want)) {
				t.Errorf("Content-Length = %d, want %d", cl, len(tt.want))
			}
		})
	}
}

func TestGETReplayOfInitializeIsRewritten(t *testing.T) {
	t.Parallel()
	var lastID string
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		lastID = r.Header.Get("Last-Event-ID")
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"resources\":{}},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"}}}\n\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"capabilities\":{}}}\n\n")
	})
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Last-Event-ID", "1")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"resources\":{\"listChanged\":true},\"extensions\":{\"io.modelcontextprotocol/skills\":{\"directoryRead\":true},\"io.modelcontextprotocol/agents\":{\"listChanged\":true}}},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"}}}\n\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"capabilities\":{}}}\n\n"
	if string(b) != want {
		t.Errorf("GET replay through sidecar =\n%q\nwant\n%q", b, want)
	}
	if lastID != "1" {
		t.Errorf("upstream saw Last-Event-ID %q, want 1", lastID)
	}
	if resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("X-Accel-Buffering = %q, want no", resp.Header.Get("X-Accel-Buffering"))
	}
}

// TestGETStreamIdentity is a property test: a GET stream of random events
// that carry no handshake reply reaches the client byte for byte.
func TestGETStreamIdentity(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		body := randomStream(rng)
		u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, body)
		})
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != body {
			t.Fatalf("case %d: stream changed:\n got %q\nwant %q", i, got, body)
		}
	}
}

func randomStream(rng *rand.Rand) string {
	eols := []string{"\n", "\r\n", "\r"}
	var b strings.Builder
	for range 1 + rng.IntN(6) {
		eol := eols[rng.IntN(len(eols))]
		if rng.IntN(3) == 0 {
			b.WriteString(": ping" + eol)
		}
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "id: %d%s", rng.IntN(1000), eol)
		}
		if rng.IntN(3) == 0 {
			b.WriteString("event: message" + eol)
		}
		if rng.IntN(4) == 0 {
			b.WriteString("retry: 1000" + eol)
		}
		msgs := []string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"capabilities":{"x":1},"content":[]}}`, `not json at all`, `{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"m"}}`}
		for _, line := range strings.SplitAfter(msgs[rng.IntN(len(msgs))], ",") {
			b.WriteString("data: " + line + eol)
		}
		b.WriteString(eol)
	}
	return b.String()
}

func TestEventIsFlushedBeforeStreamEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(initReq) // a POST whose reply the sidecar parses
		}
		// A relay that held the event back would keep the read waiting
		// as long as the upstream holds the stream: the client's timeout
		// turns that into a failure (a hang guard only).
		req, _ := http.NewRequest(method, u, body)
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "data: ") {
			t.Errorf("%s: first line = %q, %v; want the event while the upstream still holds the stream", method, line, err)
		}
		resp.Body.Close()
	}
	close(release)
}

func TestClientGoneCancelsUpstream(t *testing.T) {
	t.Parallel()
	canceled := make(chan struct{})
	started := make(chan struct{})
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
		close(canceled)
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not canceled after the client went away")
	}
}

type rpcErr struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func decodeErr(t *testing.T, b []byte) rpcErr {
	t.Helper()
	var e rpcErr
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("reply %q is not a JSON-RPC error: %v", b, err)
	}
	return e
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("upstream reached by a request the sidecar must refuse")
	})
	tests := []struct {
		name, body string
		status     int
		code       int
	}{
		{"not JSON", `{"jsonrpc":`, http.StatusBadRequest, -32700},
		{"JSON but not JSON-RPC", `{"hello":"world"}`, http.StatusBadRequest, -32600},
		{"a number", `42`, http.StatusBadRequest, -32600},
		{"empty batch", `[]`, http.StatusBadRequest, -32600},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", proxy.DefaultMaxBodyBytes) + `"}}`, http.StatusRequestEntityTooLarge, -32600},
		{"nested too deep", `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", proxy.DefaultMaxDepth) + strings.Repeat("]", proxy.DefaultMaxDepth) + `}`, http.StatusBadRequest, -32600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, b := sidecartest.Post(t, u, tt.body, nil)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if e := decodeErr(t, b); e.Error.Code != tt.code || string(e.ID) != "null" {
				t.Errorf("error = %+v, want code %d and id null", e, tt.code)
			}
		})
	}
}

func TestForeignOriginRefused(t *testing.T) {
	t.Parallel()
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if resp, b := sidecartest.Post(t, u, body, sidecartest.Header("Origin", "https://evil.example")); resp.StatusCode != http.StatusForbidden || decodeErr(t, b).Error.Code != -32600 {
		t.Errorf("foreign Origin: status %d body %s, want 403 with -32600", resp.StatusCode, b)
	}
	if resp, _ := sidecartest.Post(t, u, body, sidecartest.Header("Origin", "http://localhost:6274")); resp.StatusCode != http.StatusOK {
		t.Errorf("loopback Origin: status %d, want 200", resp.StatusCode)
	}
	if resp, _ := sidecartest.Post(t, u, body, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("no Origin: status %d, want 200", resp.StatusCode)
	}
}

func TestUpstreamFaults(t *testing.T) {
	t.Parallel()
	// A port with nothing listening, held so that nothing can: connection refused.
	dead := "http://" + deadaddr.Hold(t) + "/mcp"

	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the connection closing
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done) })
	t.Cleanup(hang.Close)

	newWith := func(upstream string, timeout time.Duration) string {
		uu, _ := url.Parse(upstream)
		p, err := proxy.New(proxy.Options{Upstream: uu, UpstreamTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		s := httptest.NewServer(p)
		t.Cleanup(s.Close)
		return s.URL
	}
	tests := []struct {
		name, url, reason string
		status            int
	}{
		{"refused", newWith(dead, time.Second), "upstream_unreachable", http.StatusBadGateway},
		{"timeout", newWith(hang.URL, 200*time.Millisecond), "upstream_timeout", http.StatusGatewayTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, b := sidecartest.Post(t, tt.url, `{"jsonrpc":"2.0","id":"abc","method":"tools/list"}`, nil)
			e := decodeErr(t, b)
			if resp.StatusCode != tt.status || e.Error.Code != -32603 || e.Error.Data["reason"] != tt.reason || string(e.ID) != `"abc"` {
				t.Errorf("got status %d, error %+v; want status %d, code -32603, reason %s, id \"abc\"", resp.StatusCode, e, tt.status, tt.reason)
			}
		})
	}
}

func TestEndStreamsClosesGETCleanly(t *testing.T) {
	t.Parallel()
	p, addr := detachedSidecar(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 1\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	resp, err := http.Get("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, _ := br.ReadString('\n')
	p.EndStreams()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Errorf("stream ended with %v, want a clean end", err)
	}
	if got := first + string(rest); got != "id: 1\ndata: {}\n\n" {
		t.Errorf("stream = %q, want the one whole event", got)
	}
}

func TestZeroDeclarationChangesNothing(t *testing.T) {
	t.Parallel()
	// The check that the declaration appears must be able to fail: with no
	// declaration configured, the initialize reply passes unchanged.
	body := "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"u\",\"version\":\"1\"}}}\n\n"
	up := httptest.NewServer(sseUpstream(body))
	t.Cleanup(up.Close)
	uu, _ := url.Parse(up.URL)
	p, _ := proxy.New(proxy.Options{Upstream: uu, Declaration: rewrite.Declaration{}})
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)
	_, got := sidecartest.Post(t, side.URL, initReq, nil)
	if diff := cmp.Diff(body, string(got)); diff != "" {
		t.Errorf("reply changed with an empty declaration (-want +got):\n%s", diff)
	}
	if bytes.Contains(got, []byte("io.modelcontextprotocol/skills")) {
		t.Errorf("skills extension declared without a declaration")
	}
}

// TestUpstreamDiesMidStream: an upstream that dies while streaming ends the
// client's stream promptly, and once it is back new requests work without
// restarting the sidecar.
func TestUpstreamDiesMidStream(t *testing.T) {
	t.Parallel()
	addr, err := childproc.FreeAddr() // bound again below: below the ephemeral range, nothing takes it meanwhile
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	streaming := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush()
		streaming <- struct{}{}
		<-r.Context().Done()
	})
	up := &http.Server{Handler: handler}
	go func() { _ = up.Serve(ln) }()
	uu, _ := url.Parse("http://" + addr + "/mcp")
	p, err := proxy.New(proxy.Options{Upstream: uu})
	if err != nil {
		t.Fatal(err)
	}
	side := httptest.NewServer(p)
	t.Cleanup(side.Close)

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, side.URL, strings.NewReader(initReq))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		<-streaming
		ended := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, resp.Body)
			ended <- err
		}()
		_ = up.Close() // the upstream dies mid-stream
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the client's stream did not end after the upstream died", method)
		}
		resp.Body.Close()

		// The upstream comes back on the same address.
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		up = &http.Server{Handler: handler}
		go func() { _ = up.Serve(ln) }()
	}
	t.Cleanup(func() { _ = up.Close() })
	req, _ := http.NewRequest(http.MethodPost, side.URL, strings.NewReader(initReq))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(line, "data: ") {
		t.Errorf("after the upstream restarted: status %d, first line %q; want a stream", resp.StatusCode, line)
	}
	<-streaming
}

// TestSlowReaderBoundsBuffering: a client that stops reading makes the
// sidecar stop reading the upstream (back-pressure), instead of buffering the
// stream without bound.
func TestSlowReaderBoundsBuffering(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	stop := make(chan struct{})
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		event := []byte("data: " + strings.Repeat("x", 4090) + "\n\n")
		for written.Load() < 256<<20 {
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			default:
			}
			n, err := w.Write(event)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	t.Cleanup(func() { close(stop) })
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The client reads nothing. Wait (bounded) until the upstream's writes
	// stall, then check how far it got.
	last := int64(-1)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		n := written.Load()
		if n == last {
			break
		}
		last = n
	}
	// Socket buffers on both hops plus one copy buffer: a few MiB at most,
	// nowhere near the 256 MiB the upstream would send.
	if n := written.Load(); n > 32<<20 {
		t.Errorf("upstream wrote %d bytes to a client that reads nothing; want the sidecar to push back (< 32 MiB)", n)
	}
}

// headerOf is the header holding the values of m.
func headerOf(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// TestBurstIsFlushedBeforeStreamEnds: events the upstream sent together,
// and one it sent after them, all reach the client while the upstream
// still holds the stream (the relay writes a burst at once, never waiting
// for more).
func TestBurstIsFlushedBeforeStreamEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ev := func(i int) string {
		return "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":" + string(rune('0'+i)) + "}}\n\n"
	}
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ev(1)+ev(2)+ev(3))
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, ev(4))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(initReq) // a POST whose reply the sidecar parses
		}
		// A hang guard, not a timing: a relay that held an event back
		// would wait for the upstream, which waits for the test.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, u, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		var got string
		for range 8 { // four events of two lines each
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: after %q: %v", method, got, err)
			}
			got += line
		}
		if want := ev(1) + ev(2) + ev(3) + ev(4); got != want {
			t.Errorf("%s: got %q, want %q", method, got, want)
		}
		resp.Body.Close()
	}
}

// TestClientGoneCancelsUpstreamOnOwnServer: on the sidecar's own server
// (the default) a client that leaves during a held tools/call cancels
// the request's context, and the cancellation reaches the upstream
// connection: the upstream sees its request's context end.
func TestClientGoneCancelsUpstreamOnOwnServer(t *testing.T) {
	t.Parallel()
	canceled := make(chan struct{})
	started := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		close(started)
		select {
		case <-r.Context().Done():
			close(canceled)
		case <-time.After(clientBound):
		}
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/mcp")
	p, err := proxy.New(proxy.Options{Upstream: u})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &h1.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", l.Addr(), len(body), body)
	select {
	case <-started:
	case <-time.After(clientBound):
		c.SetReadDeadline(time.Now().Add(time.Second))
		b, _ := io.ReadAll(c)
		t.Fatalf("the call did not reach the upstream; the sidecar answered %q", b)
	}
	c.Close()
	select {
	case <-canceled:
	case <-time.After(clientBound):
		t.Fatal("the upstream request was not canceled after the client went away")
	}
}
