// Package stdioserver owns the stdio MCP server of the tests, written from
// the stdio transport's text (one JSON-RPC message per line on stdin and
// stdout, logs on stderr, exit when stdin closes), not from the sidecar's
// adapter. A test binary becomes it: its TestMain calls Main, which runs the
// server when the environment variable ModeEnv names a mode, a
// comma-separated list of:
//
//	banner    print a line that is not JSON on stdout first
//	modern    answer server/discover (else -32601, a legacy-only server)
//	stubborn  ignore SIGTERM and the end of stdin
//	child     start a grandchild (the same binary, sleeping) at start and
//	          name its pid on stderr ("grandchild N")
//	mute      read stdin and never answer
//	strict    exit (4) on a stdin line that is not JSON, as go-sdk's
//	          StdioTransport ends its connection on one
//	gosdk     be a go-sdk server on its StdioTransport instead (one tool, echo)
//	gated     on server/discover, create a file asked-PID in the directory
//	          GateEnv names, then answer only once a file "open" is there
//	          (a server slow to answer its first message, as one that
//	          downloads itself first)
//
// A subscriptions/listen is acknowledged and sent one
// notifications/tools/list_changed, both naming it in
// _meta["io.modelcontextprotocol/subscriptionId"], and never answered.
// Its tools (tools/call params.name): echo (returns arguments.text), pid,
// crash (exits 3), never (no reply), big (a reply arguments.size bytes
// long), progress (a notifications/progress with the call's token, then
// the reply), log (a notifications/message naming nothing, then the reply),
// later (the reply, then 50 ms later a notifications/message naming nothing),
// lateprogress (the reply, then 50 ms later a notifications/progress with
// the call's token, as a server that goes on after a call it was told is
// cancelled),
// flood (arguments.count notifications, each with arguments.size bytes of
// text: notifications/progress with the call's token when it has one,
// else notifications/message naming nothing; then the reply),
// cancelled (the requestIds of the notifications/cancelled received),
// stall (the reply, then stdin is not read until SIGUSR1: a server busy
// with one request at a time).
//
// It is a test peer only: nothing in the sidecar imports it, and it imports
// nothing of the sidecar.
package stdioserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ModeEnv is the environment variable that makes a test binary the server.
const ModeEnv = "STDIO_TEST_SERVER"

// GateEnv names the directory of mode gated.
const GateEnv = "STDIO_TEST_GATE"

// Main runs the server and exits when ModeEnv is set, and returns at once
// otherwise: call it first in TestMain.
func Main() {
	if mode, ok := os.LookupEnv(ModeEnv); ok {
		run(mode)
		os.Exit(0)
	}
}

// Command is the argv and environment that run the test binary as the
// server in mode.
func Command(mode string) ([]string, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	return []string{exe, "-test.run=^$"}, append(os.Environ(), ModeEnv+"="+mode), nil
}

type testServer struct {
	mu        sync.Mutex
	out       *bufio.Writer
	cancelled []json.RawMessage
	modern    bool
	strict    bool
	gate      string // mode gated: its directory
}

func run(mode string) {
	has := func(m string) bool { return strings.Contains(","+mode+",", ","+m+",") }
	if has("sleep") {
		time.Sleep(time.Hour)
		return
	}
	if has("mute") {
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	if has("gosdk") {
		runGoSDKServer()
		return
	}
	s := &testServer{out: bufio.NewWriter(os.Stdout), modern: has("modern"), strict: has("strict")}
	if has("gated") {
		s.gate = os.Getenv(GateEnv)
	}
	if has("banner") {
		fmt.Println("Test server v1 starting on stdio (not JSON)")
	}
	if has("child") {
		exe, _ := os.Executable()
		c := exec.Command(exe, "-test.run=^$")
		c.Env = append(os.Environ(), ModeEnv+"=sleep")
		if err := c.Start(); err == nil {
			fmt.Fprintf(os.Stderr, "grandchild %d\n", c.Process.Pid)
		}
	}
	if has("stubborn") {
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Fprintln(os.Stderr, "test server ready")
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			s.handle(line)
		}
		if err != nil {
			break
		}
	}
	if has("stubborn") {
		time.Sleep(time.Hour)
	}
}

func (s *testServer) send(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

type inMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		RequestID json.RawMessage
		Arguments struct {
			Text  string `json:"text"`
			Size  int    `json:"size"`
			Count int    `json:"count"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

func (s *testServer) handle(line []byte) {
	var m inMsg
	if err := json.Unmarshal(line, &m); err != nil {
		if s.strict {
			fmt.Fprintln(os.Stderr, "a stdin line that is not JSON; exiting")
			os.Exit(4)
		}
		return
	}
	result := func(r any) { s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": r}) }
	text := func(t string) { result(map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}}) }
	switch m.Method {
	case "initialize":
		// Notifications may come before the initialize reply.
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		result(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "stdio-test", "version": "1"}})
	case "server/discover":
		if s.gate != "" {
			s.waitGate()
		}
		if !s.modern {
			s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
			return
		}
		result(map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "stdio-test", "version": "1"}})
	case "notifications/cancelled":
		var p struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		_ = json.Unmarshal(line, &p)
		s.mu.Lock()
		s.cancelled = append(s.cancelled, p.Params.RequestID)
		s.mu.Unlock()
	case "subscriptions/listen":
		// A 2026-07-28 listen: its stream's messages name it by its id in
		// _meta; it gets no reply while it lasts.
		meta := map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": m.ID}}
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": meta})
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": meta})
	case "tools/call":
		if m.Params.Name == "stall" {
			resume := make(chan os.Signal, 1)
			signal.Notify(resume, syscall.SIGUSR1)
			text("stalled")
			<-resume
			signal.Stop(resume)
			return
		}
		go s.tool(m, text)
	default:
		if m.ID != nil && m.Method != "" {
			result(map[string]any{})
		}
	}
}

// waitGate tells the test that server/discover came, then waits until
// the test opens the gate.
func (s *testServer) waitGate() {
	_ = os.WriteFile(filepath.Join(s.gate, "asked-"+strconv.Itoa(os.Getpid())), nil, 0o600)
	for {
		if _, err := os.Stat(filepath.Join(s.gate, "open")); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *testServer) tool(m inMsg, text func(string)) {
	switch m.Params.Name {
	case "echo":
		text(m.Params.Arguments.Text)
	case "pid":
		text(strconv.Itoa(os.Getpid()))
	case "crash":
		os.Exit(3)
	case "never":
	case "big":
		text(strings.Repeat("x", m.Params.Arguments.Size))
	case "progress":
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": m.Params.Meta.ProgressToken, "progress": 1, "message": m.Params.Arguments.Text}})
		time.Sleep(10 * time.Millisecond)
		text(m.Params.Arguments.Text)
	case "later":
		text("later")
		time.Sleep(50 * time.Millisecond)
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "later"}})
	case "lateprogress":
		text("done")
		time.Sleep(50 * time.Millisecond)
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": m.Params.Meta.ProgressToken, "progress": 2, "message": m.Params.Arguments.Text}})
	case "flood":
		fill := strings.Repeat("x", m.Params.Arguments.Size)
		for i := range m.Params.Arguments.Count {
			if m.Params.Meta.ProgressToken != nil {
				s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": m.Params.Meta.ProgressToken, "progress": i + 1, "message": fill}})
			} else {
				s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": fill}})
			}
		}
		text("flooded")
	case "log":
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "hello"}})
		text("logged")
	case "cancelled":
		s.mu.Lock()
		b, _ := json.Marshal(s.cancelled)
		s.mu.Unlock()
		text(string(b))
	}
}
