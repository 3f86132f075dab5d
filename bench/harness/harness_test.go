package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// loadSpan is the Duration of the tests' short loads. They end at their
// MaxSamples, not the span: a worker whose goroutine first ran more than
// two spans after the load began (a loaded machine's pause) makes no
// request, so at 50 ms a stall could leave a load with no samples. (A
// load that only fails, the unknown method's, runs the whole span.)
const loadSpan = time.Second

func TestCallBody(t *testing.T) {
	t.Parallel()
	metaV := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ModernVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	tests := map[string]struct {
		call Call
		era  Era
		want map[string]any
	}{
		"legacy echo": {
			call: echoCall, era: Legacy,
			want: map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "tools/call",
				"params": map[string]any{"name": "echo", "arguments": map[string]any{"message": "hello"}}},
		},
		"modern echo": {
			call: echoCall, era: Modern,
			want: map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "tools/call",
				"params": map[string]any{"_meta": metaV, "name": "echo", "arguments": map[string]any{"message": "hello"}}},
		},
		"modern no params": {
			call: Call{Method: "server/discover"}, era: Modern,
			want: map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "server/discover",
				"params": map[string]any{"_meta": metaV}},
		},
		"legacy progress token": {
			call: Call{Method: "tools/call", Params: `{"name":"progress"}`, Meta: `"progressToken":1`}, era: Legacy,
			want: map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "tools/call",
				"params": map[string]any{"_meta": map[string]any{"progressToken": 1.0}, "name": "progress"}},
		},
		"legacy no params": {
			call: Call{Method: "tools/list"}, era: Legacy,
			want: map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "tools/list"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got map[string]any
			if err := json.Unmarshal(tc.call.Body(tc.era), &got); err != nil {
				t.Fatalf("Body(%v) = %s, not JSON: %v", tc.era, tc.call.Body(tc.era), err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Body(%v) mismatch (-want +got):\n%s", tc.era, diff)
			}
		})
	}
}

func TestCallHeader(t *testing.T) {
	t.Parallel()
	got := echoCall.Header(Modern, "")
	for k, want := range map[string]string{"Mcp-Protocol-Version": ModernVersion, "Mcp-Method": "tools/call", "Mcp-Name": "echo"} {
		if v := got.Get(k); v != want {
			t.Errorf("Header(Modern).Get(%q) = %q, want %q", k, v, want)
		}
	}
	got = echoCall.Header(Legacy, "s1")
	if v := got.Get("Mcp-Session-Id"); v != "s1" {
		t.Errorf("Header(Legacy, s1).Get(Mcp-Session-Id) = %q, want s1", v)
	}
	if v := got.Get("Mcp-Method"); v != "" {
		t.Errorf("Header(Legacy).Get(Mcp-Method) = %q, want none", v)
	}
}

var progressCases = map[string]struct {
	in      string
	events  int
	wantErr bool
}{
	"two events then result": {
		in: "event: message\ndata: {\"method\":\"notifications/progress\",\"params\":{\"message\":\"1\"}}\n\n" +
			"data: {\"method\":\"notifications/progress\",\"params\":{\"message\":\"2\"}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		events: 2,
	},
	"CRLF":            {in: "data: {\"method\":\"notifications/progress\",\"message\":\"5\"}\r\n\r\ndata: {\"result\":{}}\r\n\r\n", events: 1},
	"error reply":     {in: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601}}\n\n", wantErr: true},
	"no stamp":        {in: "data: {\"method\":\"notifications/progress\"}\n\n", wantErr: true},
	"stamp not a num": {in: "data: {\"method\":\"notifications/progress\",\"message\":\"x\"}\n\n", wantErr: true},
	"cut short":       {in: "data: {\"method\":\"notifications/progress\",\"message\":\"1\"}\n\n", events: 1, wantErr: true},
}

func TestReadProgress(t *testing.T) {
	t.Parallel()
	for name, tc := range progressCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := 0
			err := readProgress(strings.NewReader(tc.in), func(time.Duration) { n++ })
			if (err != nil) != tc.wantErr {
				t.Errorf("readProgress(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if n != tc.events {
				t.Errorf("readProgress(%q) recorded %d events, want %d", tc.in, n, tc.events)
			}
		})
	}
}

func FuzzReadProgress(f *testing.F) {
	for _, tc := range progressCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		_ = readProgress(strings.NewReader(in), func(time.Duration) {})
	})
}

func TestNginxConfig(t *testing.T) {
	t.Parallel()
	conf := NginxConfig("PREFIX", "127.0.0.1:1", "127.0.0.1:2")
	for _, want := range []string{
		"listen 127.0.0.1:1;", "server 127.0.0.1:2;", "keepalive 256;", "proxy_http_version 1.1;",
		`proxy_set_header Connection "";`, "proxy_buffering off;", "pid PREFIX/nginx.pid;", "daemon off;",
		"worker_processes 1;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("NginxConfig lacks %q:\n%s", want, conf)
		}
	}
}

// TestLoadAgainstUpstream drives the in-process upstream briefly in both
// eras through the load generator: the wire contract (headers, _meta,
// session handshake) must satisfy go-sdk v1.8.0, or every row would fail.
func TestLoadAgainstUpstream(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewUpstream())
	defer srv.Close()
	url := srv.URL + "/mcp"
	cases := map[string]func(context.Context, *http.Client) (Worker, error){
		"legacy echo":     callWorker(Legacy, echoCall, url, nil),
		"modern echo":     callWorker(Modern, echoCall, url, nil),
		"modern discover": callWorker(Modern, Call{Method: "server/discover"}, url, nil),
		"initialize":      callWorker(eraNoSession, InitializeCall(), url, http.Header{StatelessHeader: {"1"}}),
		"legacy progress": progressWorker(Legacy, url),
		"modern progress": progressWorker(Modern, url),
		"legacy blob": callWorker(Legacy, Call{Method: "resources/read", Params: `{"uri":"` + blob1MURI + `"}`, Name: blob1MURI},
			url, nil),
		"legacy relayed blob": callWorker(Legacy, Call{Method: "resources/read", Params: `{"uri":"` + relayBlob1MURI + `"}`, Name: relayBlob1MURI},
			url, nil),
		"modern tools/list": callWorker(Modern, Call{Method: "tools/list"}, url, nil),
		"unknown method":    callWorker(Modern, Call{Method: "skills/list"}, url, nil),
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			res := RunLoad(t.Context(), LoadSpec{Concurrency: 2, Duration: loadSpan, MaxSamples: 10, NewWorker: w})
			if name == "unknown method" {
				// The check must be able to fail: go-sdk has no skills/list.
				if res.Err == nil || len(res.Samples) > 0 {
					t.Errorf("RunLoad(skills/list on plain go-sdk) = %d samples, err %v; want an error", len(res.Samples), res.Err)
				}
				return
			}
			if res.Err != nil || res.Errors > 0 || len(res.Samples) == 0 {
				t.Errorf("RunLoad(%s) = %d samples, %d errors, err %v", name, len(res.Samples), res.Errors, res.Err)
			}
		})
	}
}

var cursorCases = map[string]struct {
	in      string
	want    string
	wantErr bool
}{
	"json last page":   {in: `{"jsonrpc":"2.0","id":1,"result":{"skills":[]}}`, want: ""},
	"json with cursor": {in: `{"jsonrpc":"2.0","id":1,"result":{"skills":[],"nextCursor":"s1:abc"}}`, want: "s1:abc"},
	"sse with cursor": {in: "event: message\ndata: {\"method\":\"notifications/progress\"}\n\n" +
		"event: message\ndata: {\"id\":1,\"result\":{\"nextCursor\":\"x\\\"y\"}}\n\n", want: `x"y`},
	"sse crlf":      {in: "data: {\"id\":1,\"result\":{\"nextCursor\":\"c\"}}\r\n\r\n", want: "c"},
	"sse no result": {in: "data: {\"id\":1,\"error\":{}}\n\n", wantErr: true},
	"not json":      {in: "{nope", wantErr: true},
	"empty":         {in: "", wantErr: true},
}

func TestNextCursor(t *testing.T) {
	t.Parallel()
	for name, tc := range cursorCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := nextCursor([]byte(tc.in))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("nextCursor(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func FuzzNextCursor(f *testing.F) {
	for _, tc := range cursorCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = nextCursor([]byte(in))
	})
}

// TestPagedListing pages through go-sdk servers: the harness's upstream (one
// page) and one whose page size forces several pages.
func TestPagedListing(t *testing.T) {
	t.Parallel()
	small := mcp.NewServer(&mcp.Implementation{Name: "small", Version: "v0"}, &mcp.ServerOptions{PageSize: 3})
	for i := range 10 {
		small.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	tests := map[string]struct {
		h         http.Handler
		wantPages int
		minBytes  int
	}{
		"upstream": {h: NewUpstream(), wantPages: 1, minBytes: 200 << 10},
		"paged":    {h: testupstream.Handler(small, &mcp.StreamableHTTPOptions{Stateless: true}), wantPages: 4, minBytes: 100},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			var shape listingShape
			res := RunLoad(t.Context(), LoadSpec{Concurrency: 1, Duration: loadSpan, MaxSamples: 3,
				NewWorker: pagedWorker(Call{Method: "tools/list"}, srv.URL+"/mcp", &shape)})
			if res.Err != nil || len(res.Samples) == 0 {
				t.Fatalf("RunLoad(paged tools/list) = %d samples, err %v", len(res.Samples), res.Err)
			}
			if shape.pages != tc.wantPages || shape.bytes < tc.minBytes {
				t.Errorf("paged tools/list shape = %+v, want %d pages of at least %d bytes", shape, tc.wantPages, tc.minBytes)
			}
		})
	}
}

// TestLoopProxy drives the minimal relays bench-wrk.sh measures as floors
// (loopproxy's and floorproxy's) through the load generator in both eras:
// every reply must come back whole and in order on kept-alive connections.
func TestLoopProxy(t *testing.T) {
	t.Parallel()
	for name, relay := range map[string]func(c, up net.Conn){"loop": relayLoop, "floor": relayFloor} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			up := httptest.NewServer(NewUpstream())
			defer up.Close()
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- serveLoop(ctx, l, strings.TrimPrefix(up.URL, "http://"), relay) }()
			url := "http://" + l.Addr().String() + "/mcp"
			for name, w := range map[string]func(context.Context, *http.Client) (Worker, error){
				"legacy echo": callWorker(Legacy, echoCall, url, nil),
				"modern echo": callWorker(Modern, echoCall, url, nil),
			} {
				// Bounded: a relay that loses a body leaves its request waiting.
				lctx, lcancel := context.WithTimeout(t.Context(), 10*time.Second)
				res := RunLoad(lctx, LoadSpec{Concurrency: 2, Duration: loadSpan, MaxSamples: 20, NewWorker: w})
				lcancel()
				if res.Err != nil || res.Errors > 0 || len(res.Samples) == 0 {
					t.Errorf("RunLoad(%s) through the relay = %d samples, %d errors, err %v", name, len(res.Samples), res.Errors, res.Err)
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serveLoop after cancel = %v, want nil", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("serveLoop still running 5s after its context ended")
			}
		})
	}
}

// TestFirstPageUpstreamCounts serves the firstpage scenario's upstream as
// its subcommand does, sends it requests and a notification, and reads its
// counts back from its stats address: the requests per new caller the
// scenario reports come from there.
func TestFirstPageUpstreamCounts(t *testing.T) {
	t.Parallel()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	stats, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- ServeFirstPageUpstream(ctx, ServeOptions{Listen: addr, StatsListen: stats}, FirstPageOptions{ServesSome: true})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeFirstPageUpstream after cancel = %v, want nil", err)
		}
	}()
	if err := WaitReady(t.Context(), nil, TCPProbe(addr), 5*time.Millisecond, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	client := NewClient(2)
	url, countsURL := "http://"+addr+"/mcp", "http://"+stats+"/counts"
	before, err := upstreamCounts(t.Context(), client, countsURL)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 0 {
		t.Errorf("counts before any request = %v, want none", before)
	}
	served := fmt.Sprintf("skill://f%03d/SKILL.md", 0)
	calls := []Call{
		{Method: "resources/list"}, {Method: "resources/list"}, {Method: "resources/templates/list"},
		{Method: "resources/read", Params: `{"uri":"` + served + `"}`, Name: served},
	}
	var buf strings.Builder
	for _, c := range calls {
		var b bytes.Buffer
		resp, err := post(t.Context(), client, url, c.Header(Modern, c.Name), c.Body(Modern), &b)
		if err != nil {
			t.Fatalf("%s: %v", c.Method, err)
		}
		if resp.StatusCode != http.StatusOK || strings.Contains(b.String(), `"error"`) {
			t.Errorf("%s = %d %s, want a result", c.Method, resp.StatusCode, b.String())
		}
		buf.WriteString(b.String())
	}
	if !strings.Contains(buf.String(), "Served by the upstream.") {
		t.Errorf("replies hold no text the upstream serves for %s: %s", served, buf.String())
	}
	// A notification is not a request: not counted.
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(note))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = Call{Method: "notifications/cancelled"}.Header(Modern, "")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("notification = %d, want 202", resp.StatusCode)
	}
	got, err := upstreamCounts(t.Context(), client, countsURL)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"resources/list": 2, "resources/templates/list": 1, "resources/read": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts mismatch (-want +got):\n%s", diff)
	}
	if _, err := upstreamCounts(t.Context(), client, "http://"+stats+"/nothing"); err == nil {
		t.Error("upstreamCounts of a path that serves no counts = nil error, want one")
	}
}
