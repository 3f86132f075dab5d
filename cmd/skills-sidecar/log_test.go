package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// Secrets a client sends; none may reach the log.
const (
	testToken   = "tok-8f3a61c0e2d94b7d"
	testCookie  = "cookie-5b0e7c21a9f4"
	testSession = "client-sess-c4e2d7a19b30" // a session id the client makes up
	// skillBody is a line of the example plugin's incident-summary skill.
	skillBody = "A good summary answers four questions in this order"
)

// authUpstream starts a go-sdk server with sessions (the legacy wire) that
// admits only requests carrying testToken, the way an OAuth-protected MCP
// server does, and breaks off any request marked X-Test-Fail.
func authUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := testupstream.Handler(s, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Header.Get("X-Test-Fail") != "" {
			panic(http.ErrAbortHandler) // the connection closes with no reply
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// startSidecar runs the binary's run with args (startRun, no metrics
// listener) and returns its MCP URL and a function that stops it (see
// serving.stop) and returns everything it logged.
func startSidecar(t *testing.T, args ...string) (string, func() string) {
	t.Helper()
	s := startRun(t, false, args...)
	return s.url, func() string {
		t.Helper()
		s.stop(t)
		return s.errOut.String()
	}
}

// logLine is one log line decoded: level, message and fields.
type logLine struct {
	level, msg string
	fields     map[string]any
}

// parseLog decodes the lines of a log in format json or console. A console
// line is time, level, message (and a caller, when configured) separated
// by tabs, then the fields as one JSON object.
func parseLog(t *testing.T, format, log string) []logLine {
	t.Helper()
	var lines []logLine
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		text := sc.Text()
		var l logLine
		switch format {
		case "json":
			if err := json.Unmarshal([]byte(text), &l.fields); err != nil {
				t.Fatalf("log line %q is not JSON: %v", text, err)
			}
			l.level, _ = l.fields["level"].(string)
			l.msg, _ = l.fields["msg"].(string)
			delete(l.fields, "level")
			delete(l.fields, "msg")
			if _, ok := l.fields["ts"].(string); !ok {
				t.Errorf("log line %q has no ts", text)
			}
			delete(l.fields, "ts")
		case "console":
			parts := strings.Split(text, "\t")
			if len(parts) < 3 {
				t.Fatalf("console line %q has fewer than 3 tab-separated parts", text)
			}
			if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", parts[0]); err != nil {
				t.Errorf("console line %q does not start with a time: %v", text, err)
			}
			l.level, l.msg = strings.ToLower(parts[1]), parts[2]
			l.fields = map[string]any{}
			if last := parts[len(parts)-1]; len(parts) > 3 && strings.HasPrefix(last, "{") {
				if err := json.Unmarshal([]byte(last), &l.fields); err != nil {
					t.Fatalf("console line %q: fields are not JSON: %v", text, err)
				}
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// TestRequestLineFormats: the logger built as the binary builds it writes
// the per-request line with the same fields in JSON and in console format.
func TestRequestLineFormats(t *testing.T) {
	t.Parallel()
	up := authUpstream(t)
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			u, stop := startSidecar(t, "--upstream", up, "--log-format", format, "--log-level", "debug")
			if status, _, body := sidecartest.Call(t, u, sidecartest.Initialize, map[string]string{"Authorization": "Bearer " + testToken}); status != http.StatusOK {
				t.Fatalf("initialize = %d %s, want 200", status, body)
			}
			var got []logLine
			for _, l := range parseLog(t, format, stop()) {
				if l.msg == "request" {
					got = append(got, l)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d request lines, want 1: %+v", len(got), got)
			}
			l := got[0]
			d, _ := l.fields["duration"].(string)
			if _, err := time.ParseDuration(d); err != nil {
				t.Errorf("duration = %v, want a Go duration string", l.fields["duration"])
			}
			delete(l.fields, "duration")
			want := map[string]any{"method": "initialize", "era": "legacy", "route": "upstream", "outcome": "2xx",
				"status": float64(200), "upstream_status": float64(200)}
			if l.level != "debug" {
				t.Errorf("level = %q, want debug", l.level)
			}
			if diff := cmp.Diff(want, l.fields); diff != "" {
				t.Errorf("request line fields (-want +got):\n%s", diff)
			}
		})
	}
}

// headerTransport adds the client's credentials to every request.
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestLogsHoldNoSecrets sends a bearer token, a cookie and session ids
// (made up by the client, and minted by the upstream) through the whole
// sidecar (auth gate, local answers, forwarding, a refusal, a failure, a
// GET stream) with everything logged at debug, and finds none of them, and
// no skill body, in the log.
func TestLogsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	up := authUpstream(t)
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			u, stop := startSidecar(t, "--upstream", up, "--plugin-dir", "../../examples/plugin", "--log-format", format, "--log-level", "debug")
			creds := map[string]string{"Authorization": "Bearer " + testToken, "Cookie": "sid=" + testCookie}
			with := func(extra ...string) map[string]string {
				h := map[string]string{}
				for k, v := range creds {
					h[k] = v
				}
				for i := 0; i+1 < len(extra); i += 2 {
					h[extra[i]] = extra[i+1]
				}
				return h
			}

			// A go-sdk client: handshake, GET stream, tools, session end.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			hc := &http.Client{Transport: headerTransport{h: http.Header{"Authorization": {creds["Authorization"]}, "Cookie": {creds["Cookie"]}}}}
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc, MaxRetries: 1}, nil)
			if err != nil {
				t.Fatalf("Connect = %v", err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
				t.Errorf("tools/call = %v", err)
			}
			if _, err := cs.ListResources(ctx, nil); err != nil {
				t.Errorf("resources/list = %v", err)
			}
			secrets := []string{testToken, testCookie, testSession, skillBody}
			if id := cs.ID(); id != "" {
				secrets = append(secrets, id)
			}
			_ = cs.Close()

			// A legacy session by hand, so its minted id is known.
			status, h, body := sidecartest.Call(t, u, sidecartest.Initialize, creds)
			sid := h.Get("Mcp-Session-Id")
			if status != http.StatusOK || sid == "" {
				t.Fatalf("initialize = %d (session %q) %s; want 200 and a session", status, sid, body)
			}
			secrets = append(secrets, sid)
			sess := with("Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")
			sidecartest.Call(t, u, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess)
			for _, req := range []string{
				`{"jsonrpc":"2.0","id":2,"method":"skills/list"}`,
				`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://incident-summary/SKILL.md"}}`,
				`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
			} {
				if status, _, body := sidecartest.Call(t, u, req, sess); status != http.StatusOK {
					t.Errorf("%s = %d %s, want 200", req, status, body)
				} else if strings.Contains(req, "resources/read") && !strings.Contains(body, skillBody) {
					t.Errorf("resources/read of the skill lacks its body: %s", body)
				}
			}
			// Refused by the auth gate: a wrong token, with a session id
			// the client made up.
			wrong := map[string]string{"Authorization": "Bearer wrong-" + testToken, "Cookie": "sid=" + testCookie, "Mcp-Session-Id": testSession}
			if status, _, _ := sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":5,"method":"skills/list"}`, wrong); status != http.StatusUnauthorized {
				t.Errorf("skills/list with a wrong token = %d, want 401", status)
			}
			// Forwarded with a session the upstream does not know.
			if status, _, _ := sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, with("Mcp-Session-Id", testSession)); status != http.StatusNotFound {
				t.Errorf("tools/list in an unknown session = %d, want 404", status)
			}
			// A failure: the upstream breaks off the exchange.
			if status, _, _ := sidecartest.Call(t, u, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, with("Mcp-Session-Id", sid, "X-Test-Fail", "1")); status != http.StatusBadGateway {
				t.Errorf("tools/list the upstream breaks off = %d, want 502", status)
			}

			log := stop()
			lines := parseLog(t, format, log)
			count := map[string]int{}
			for _, l := range lines {
				count[l.level+" "+l.msg]++
			}
			// The log was captured at every level, and the traffic was logged.
			for _, want := range []string{"debug request", "info request refused", "warn request failed"} {
				if count[want] == 0 {
					t.Errorf("no %q line; lines by level and message: %v", want, count)
				}
			}
			for _, s := range secrets {
				if strings.Contains(log, s) {
					t.Errorf("the log holds %q:\n%s", s, log)
				}
			}
		})
	}
}

// TestLogLevelFollowsAnnotations: with the level left to the annotation,
// editing the annotations file turns debug lines on and off again while
// the process runs.
func TestLogLevelFollowsAnnotations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "annotations")
	// The kubelet replaces the downward API file atomically; so does this.
	write := func(level string) {
		t.Helper()
		tmp := filepath.Join(dir, "annotations.tmp")
		b := "app.kubernetes.io/name=\"demo\"\n" + config.AnnotationPrefix + "log-level=\"" + level + "\"\n"
		if err := os.WriteFile(tmp, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("info")
	var buf syncBuffer
	level, log, err := newLogger(config.Config{LogLevel: "info", LogFormat: "json"}, false, &buf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchLogLevel(ctx, path, false, level, log, 10*time.Millisecond)
	}()
	defer func() { cancel(); <-done }()

	// debugShows logs a fresh debug line and reports whether it was written.
	n := 0
	debugShows := func() bool {
		n++
		mark := "probe-" + strconv.Itoa(n)
		log.Debug(mark)
		return strings.Contains(buf.String(), `"msg":"`+mark+`"`)
	}
	// until waits (waitFor) for debugShows to report want.
	until := func(want bool, what string) {
		t.Helper()
		waitFor(t, fmt.Sprintf("debug lines shown = %v %s", want, what), func() bool { return debugShows() == want },
			func() string { return "log:\n" + buf.String() })
	}

	// Several ticks at info: still no debug.
	time.Sleep(50 * time.Millisecond)
	if debugShows() {
		t.Fatalf("a debug line was written at level info:\n%s", buf.String())
	}
	write("debug")
	until(true, "after the annotation says debug")
	if !strings.Contains(buf.String(), `"msg":"log level changed by annotation","log_level":"debug"`) {
		t.Errorf("no line saying the level changed to debug:\n%s", buf.String())
	}
	write("warn")
	until(false, "after the annotation says warn")
	if debugShows() {
		t.Errorf("a debug line was written after the level went back to warn:\n%s", buf.String())
	}
	// Back from warn to info: the change is logged although the level it
	// leaves would drop an info line.
	write("info")
	const raised = `"msg":"log level changed by annotation","log_level":"info","from":"warn"`
	waitFor(t, "a line saying the level went from warn to info", func() bool { return strings.Contains(buf.String(), raised) },
		func() string { return "log:\n" + buf.String() })
}

// TestLogFormatAnyCase holds what Validate accepts to what newLogger does:
// a log format in any ASCII case selects that encoding, so --log-format
// Console is not silently JSON.
func TestLogFormatAnyCase(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		format   string
		demoMode bool
		json     bool
	}{
		{"json", false, true},
		{"JSON", true, true},
		{"console", false, false},
		{"Console", false, false},
		{"CONSOLE", false, false},
		{"auto", true, false},
		{"AUTO", true, false},
		{"Auto", false, true},
	} {
		cfg := config.Config{LogLevel: "INFO", LogFormat: tt.format}
		if err := cfg.Validate(); err != nil && strings.Contains(err.Error(), "log-") {
			t.Errorf("Validate(log-format %q) = %v, want it accepted", tt.format, err)
		}
		var buf strings.Builder
		_, log, err := newLogger(cfg, tt.demoMode, &buf)
		if err != nil {
			t.Fatalf("newLogger(%q): %v", tt.format, err)
		}
		log.Info("probe")
		if got := json.Valid([]byte(strings.TrimSpace(buf.String()))); got != tt.json {
			t.Errorf("--log-format %q (demo %v) wrote %q: JSON = %v, want %v", tt.format, tt.demoMode, buf.String(), got, tt.json)
		}
	}
}
