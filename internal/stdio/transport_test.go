package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

// hang bounds every wait of these tests; none is expected to come near it.
const hang = 20 * time.Second

type counts struct {
	mu       sync.Mutex
	events   map[string]int
	restarts int
	procs    int
	refusals map[string]int // by table and refusal ("share", "full"): "table/full"
}

func (c *counts) StdioProcesses(n int) { c.mu.Lock(); c.procs = n; c.mu.Unlock() }
func (c *counts) StdioRestart()        { c.mu.Lock(); c.restarts++; c.mu.Unlock() }
func (c *counts) StdioEvent(e string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.events == nil {
		c.events = map[string]int{}
	}
	c.events[e]++
}
func (c *counts) event(e string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.events[e] }
func (c *counts) CallerRefusal(table string, full bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusals == nil {
		c.refusals = map[string]int{}
	}
	r := "share"
	if full {
		r = "full"
	}
	c.refusals[table+"/"+r]++
}
func (c *counts) refused(table, refusal string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refusals[table+"/"+refusal]
}

// start runs a Transport over the test server in mode.
func start(t *testing.T, mode string, set func(*Transport)) (*Transport, *counts) {
	t.Helper()
	argv, env := testCommand(t, mode)
	m := &counts{}
	tr := &Transport{Command: argv, Env: env, Metrics: m, Grace: 500 * time.Millisecond}
	if set != nil {
		set(tr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr.Start(ctx)
	t.Cleanup(func() {
		cancel()
		_ = tr.Close()
	})
	waitFor(t, "the probe", tr.Ready)
	return tr, m
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, hang, cond, what)
}

// exchange is one HTTP exchange with the Transport: its status, headers
// and the JSON-RPC messages of its body (JSON or SSE).
type exchange struct {
	status int
	header http.Header
	msgs   []map[string]any
}

func (e exchange) last() map[string]any {
	if len(e.msgs) == 0 {
		return nil
	}
	return e.msgs[len(e.msgs)-1]
}

func do(t *testing.T, tr *Transport, method, sid, body string, h http.Header) exchange {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, "http://stdio.invalid/mcp", strings.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, body, err)
	}
	defer resp.Body.Close()
	e := exchange{status: resp.StatusCode, header: resp.Header}
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				e.msgs = append(e.msgs, decode(t, []byte(d)))
			}
		}
	} else if len(b) > 0 {
		e.msgs = append(e.msgs, decode(t, b))
	}
	return e
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return m
}

const initReq = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func initialize(t *testing.T, tr *Transport) string {
	t.Helper()
	e := do(t, tr, "POST", "", initReq, nil)
	sid := e.header.Get("Mcp-Session-Id")
	if e.status != 200 || sid == "" || e.last()["result"] == nil {
		t.Fatalf("initialize = %d %v (session %q)", e.status, e.msgs, sid)
	}
	return sid
}

func toolCall(id any, name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

// text is the first text content of a tools/call result, or "" for an error.
func text(m map[string]any) string {
	r, _ := m["result"].(map[string]any)
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	s, _ := c[0].(map[string]any)["text"].(string)
	return s
}

func reason(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	s, _ := d["reason"].(string)
	return s
}

// alive reports whether pid is a process that has not exited (a zombie
// has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func pidOf(t *testing.T, tr *Transport, sid string) int {
	t.Helper()
	e := do(t, tr, "POST", sid, toolCall(1, "pid", nil), nil)
	pid, err := strconv.Atoi(text(e.last()))
	if err != nil {
		t.Fatalf("pid call = %d %v", e.status, e.msgs)
	}
	return pid
}

// idlePid initializes a session on tr, whose IdleTimeout is idle, and
// asks its process's pid. A machine stalled for longer than idle between
// the two ends the session honestly (404): it is made again, at most
// twice. A session ended sooner fails the test.
func idlePid(t *testing.T, tr *Transport, idle time.Duration) (string, int) {
	t.Helper()
	for try := 1; ; try++ {
		began := time.Now()
		sid := initialize(t, tr)
		e := do(t, tr, "POST", sid, toolCall(1, "pid", nil), nil)
		if pid, err := strconv.Atoi(text(e.last())); err == nil {
			return sid, pid
		}
		if took := time.Since(began); e.status != http.StatusNotFound || took < idle || try == 3 {
			t.Fatalf("pid call %v after the initialize began = %d %v", took, e.status, e.msgs)
		}
		t.Logf("try %d: the session idled out before its first call; again", try)
	}
}

// TestLegacySessionIsAProcess: each initialize gets a process of its own
// under its own session id; DELETE ends that process and the session's
// next request is 404.
func TestLegacySessionIsAProcess(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	a, b := initialize(t, tr), initialize(t, tr)
	if a == b {
		t.Fatalf("two sessions share the id %q", a)
	}
	pa, pb := pidOf(t, tr, a), pidOf(t, tr, b)
	if pa == pb {
		t.Fatalf("two sessions share the process %d", pa)
	}
	if e := do(t, tr, "DELETE", a, "", nil); e.status != 200 {
		t.Fatalf("DELETE = %d", e.status)
	}
	waitFor(t, "the deleted session's process to exit", func() bool { return !alive(pa) })
	if e := do(t, tr, "POST", a, toolCall(2, "pid", nil), nil); e.status != 404 {
		t.Errorf("request on a deleted session = %d %v, want 404", e.status, e.msgs)
	}
	if !alive(pb) || pidOf(t, tr, b) != pb {
		t.Errorf("the other session's process %d ended with the first", pb)
	}
}

// TestBannerSkipped: a line on stdout that is not JSON-RPC is skipped and
// counted; the session works.
func TestBannerSkipped(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "banner", nil)
	sid := initialize(t, tr)
	if got := text(do(t, tr, "POST", sid, toolCall(1, "echo", map[string]any{"text": "hi"}), nil).last()); got != "hi" {
		t.Errorf("echo = %q, want hi", got)
	}
	if m.event(EventSkippedLine) == 0 {
		t.Errorf("no skipped line counted for the banner")
	}
}

// TestCrashMidSession: a process that exits during a call answers the call
// with an error at once, and the session's next request is 404.
func TestCrashMidSession(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", func(tr *Transport) { tr.RequestTimeout = hang * 2 })
	sid := initialize(t, tr)
	e := do(t, tr, "POST", sid, toolCall(7, "crash", nil), nil)
	if reason(e.last()) != "stdio_process_exited" || e.last()["id"] != float64(7) {
		t.Fatalf("crashing call = %d %v, want an error with id 7 and reason stdio_process_exited", e.status, e.msgs)
	}
	if e := do(t, tr, "POST", sid, toolCall(8, "pid", nil), nil); e.status != 404 {
		t.Errorf("next request = %d %v, want 404", e.status, e.msgs)
	}
}

// TestNeverAnswers: a request without a reply times out with an error and
// the process is sent notifications/cancelled naming it.
func TestNeverAnswers(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "", func(tr *Transport) { tr.RequestTimeout = time.Second })
	// Initialized again if a busy machine let the process start past the
	// second (a timed-out initialize ends its session).
	var sid string
	waitFor(t, "a session", func() bool {
		e := do(t, tr, "POST", "", initReq, nil)
		sid = e.header.Get("Mcp-Session-Id")
		return e.status == 200 && sid != "" && e.last()["result"] != nil
	})
	e := do(t, tr, "POST", sid, toolCall(5, "never", nil), nil)
	if reason(e.last()) != "stdio_request_timeout" || e.last()["id"] != float64(5) {
		t.Fatalf("unanswered call = %d %v, want a timeout error with id 5", e.status, e.msgs)
	}
	// Asked again if a busy machine let the question itself time out.
	var ids []string
	waitFor(t, "an answer from the cancelled tool", func() bool {
		r := do(t, tr, "POST", sid, toolCall(6, "cancelled", nil), nil).last()
		return reason(r) == "" && json.Unmarshal([]byte(text(r)), &ids) == nil
	})
	if len(ids) == 0 || !strings.HasPrefix(ids[0], "skills-sidecar-") {
		t.Errorf("cancellations the server saw = %q, want the minted id of the call first", ids)
	}
	if m.event(EventTimeout) == 0 {
		t.Errorf("no timeout counted")
	}
}

// TestModernCollidingIDs: concurrent 2026-07-28 callers whose requests
// carry the same id and the same progressToken share one process and each
// get their own reply and progress.
func TestModernCollidingIDs(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "modern", nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("caller-%d", i)
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"text":"` + want +
				`"},"_meta":{"progressToken":"tok","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
			e := do(t, tr, "POST", "", body, nil)
			if len(e.msgs) != 2 || text(e.last()) != want || e.last()["id"] != float64(1) {
				errs <- fmt.Sprintf("caller %d got %v", i, e.msgs)
				return
			}
			p, _ := e.msgs[0]["params"].(map[string]any)
			if p["progressToken"] != "tok" || p["message"] != want {
				errs <- fmt.Sprintf("caller %d got progress %v", i, p)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	waitFor(t, "the probe's processes to end", func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.procs == 1 })
}

// TestLegacyOnlyRefusesSessionless: a legacy-only server's requests
// outside a session get 400, as its own HTTP transport would answer.
func TestLegacyOnlyRefusesSessionless(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	if e := do(t, tr, "POST", "", toolCall(1, "pid", nil), nil); e.status != 400 {
		t.Errorf("sessionless request = %d %v, want 400", e.status, e.msgs)
	}
}

// TestOverlongLine: a reply over MaxLine fails its call; the shared
// process goes on.
func TestOverlongLine(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "modern", func(tr *Transport) { tr.MaxLine = 16 << 10 })
	e := do(t, tr, "POST", "", toolCall(3, "big", map[string]any{"size": 64 << 10}), nil)
	if reason(e.last()) != "stdio_line_too_long" || e.last()["id"] != float64(3) {
		t.Fatalf("big reply = %d %v, want line-too-long with id 3", e.status, e.msgs)
	}
	if got := text(do(t, tr, "POST", "", toolCall(4, "echo", map[string]any{"text": "still"}), nil).last()); got != "still" {
		t.Errorf("after the long line, echo = %q", got)
	}
	if m.event(EventLineTooLong) != 1 || m.restarts != 0 {
		t.Errorf("line_too_long = %d, restarts = %d; want 1, 0", m.event(EventLineTooLong), m.restarts)
	}
}

// TestSharedRestarts: a crash of the shared process fails its call and
// the next request starts another process, counted.
func TestSharedRestarts(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "modern", nil)
	if r := reason(do(t, tr, "POST", "", toolCall(1, "crash", nil), nil).last()); r != "stdio_process_exited" {
		t.Fatalf("crash = %q", r)
	}
	if got := text(do(t, tr, "POST", "", toolCall(2, "echo", map[string]any{"text": "back"}), nil).last()); got != "back" {
		t.Errorf("after a crash, echo = %q", got)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.restarts != 1 {
		t.Errorf("restarts = %d, want 1", m.restarts)
	}
}

// TestUnnamedMessages: a notification naming no request goes on the POST
// stream of the one request in flight; with none in flight, to the GET stream.
func TestUnnamedMessages(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	sid := initialize(t, tr)
	e := do(t, tr, "POST", sid, toolCall(1, "log", nil), nil)
	if len(e.msgs) != 2 || e.msgs[0]["method"] != "notifications/message" || text(e.last()) != "logged" {
		t.Errorf("log call = %v, want the notification then the reply", e.msgs)
	}
}

// TestSessionsBounded: past its share (a quarter of MaxProcesses) a
// caller's new session ends its least recently used idle one (whose next
// request is 404); when every one is busy the new session is refused with
// 429 and Retry-After.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	tr, m := start(t, "", func(tr *Transport) { tr.MaxProcesses = 8 })
	a := initialize(t, tr)
	b := initialize(t, tr)
	pidOf(t, tr, b) // b is now the more recently used
	c := initialize(t, tr)
	if e := do(t, tr, "POST", a, toolCall(1, "pid", nil), nil); e.status != 404 {
		t.Errorf("the evicted session's request = %d, want 404", e.status)
	}
	hold(t, tr, b, 2) // both busy
	hold(t, tr, c, 2)
	e := do(t, tr, "POST", "", initReq, nil)
	if e.status != 429 || reason(e.last()) != "caller_share_exhausted" || e.header.Get("Retry-After") == "" || e.last()["id"] != float64(0) {
		t.Fatalf("initialize with every session busy = %d %v %v, want 429 with Retry-After", e.status, e.header, e.msgs)
	}
	if m.event(EventRefused) != 1 || m.event(EventEvicted) != 1 {
		t.Errorf("refused %d, evicted %d; want 1, 1", m.event(EventRefused), m.event(EventEvicted))
	}
}

// TestIdleSessionEnds: a session unused for IdleTimeout is ended.
func TestIdleSessionEnds(t *testing.T) {
	t.Parallel()
	const idle = 200 * time.Millisecond
	tr, _ := start(t, "", func(tr *Transport) { tr.IdleTimeout = idle })
	sid, pid := idlePid(t, tr, idle)
	waitFor(t, "the idle session's process to exit", func() bool { return !alive(pid) })
	if e := do(t, tr, "POST", sid, toolCall(2, "pid", nil), nil); e.status != 404 {
		t.Errorf("request on an idle-ended session = %d", e.status)
	}
}

// TestCloseLeavesNothing: Close ends every process and what it started:
// a server that exits when its stdin closes but leaves a grandchild, and
// one that ignores the end of stdin and SIGTERM.
func TestCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"child", "stubborn,child"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			argv, env := testCommand(t, mode)
			var stderr syncBuffer
			tr := &Transport{Command: argv, Env: env, Grace: 200 * time.Millisecond, Logger: newTestLogger(&stderr)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tr.Start(ctx)
			waitFor(t, "the probe", tr.Ready)
			sid := initialize(t, tr)
			pid := pidOf(t, tr, sid)
			var grandchild int
			waitFor(t, "the grandchild's pid on stderr", func() bool {
				_, err := fmt.Sscanf(stderr.after("grandchild "), "%d", &grandchild)
				return err == nil
			})
			_ = tr.Close()
			waitFor(t, "the process and its grandchild to exit", func() bool { return !alive(pid) && !alive(grandchild) })
		})
	}
}

// openGet opens session sid's GET stream on tr, failing t unless it is an
// SSE stream; the stream ends with the test.
func openGet(t *testing.T, tr *Transport, sid string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://stdio.invalid/mcp", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET = %v, %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestGetStream: a message naming no request, sent while none is in
// flight, goes on the session's GET stream; a second GET stream is 409.
func TestGetStream(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	sid := initialize(t, tr)
	resp := openGet(t, tr, sid)
	if e := do(t, tr, "GET", sid, "", nil); e.status != 409 {
		t.Errorf("second GET = %d, want 409", e.status)
	}
	if got := text(do(t, tr, "POST", sid, toolCall(1, "later", nil), nil).last()); got != "later" {
		t.Fatalf("later = %q", got)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if m := decode(t, []byte(d)); m["method"] != "notifications/message" {
				t.Errorf("GET stream got %v, want the notification", m)
			}
			return
		}
	}
	t.Fatalf("GET stream ended: %v", sc.Err())
}

// TestClientCancel: a client's notifications/cancelled reaches the process
// naming the minted id of the call it cancels.
func TestClientCancel(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	sid := initialize(t, tr)
	hold(t, tr, sid, 9)
	if e := do(t, tr, "POST", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, nil); e.status != 202 {
		t.Fatalf("cancel = %d", e.status)
	}
	var ids []string
	_ = json.Unmarshal([]byte(text(do(t, tr, "POST", sid, toolCall(10, "cancelled", nil), nil).last())), &ids)
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "skills-sidecar-") {
		t.Errorf("cancellations the server saw = %q, want the minted id of call 9", ids)
	}
}

// hold keeps a call with id that is never answered in flight on session
// sid until the test ends, and returns once it is in flight.
func hold(t *testing.T, tr *Transport, sid string, id int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://stdio.invalid/mcp", strings.NewReader(toolCall(id, "never", nil)))
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "the call to be in flight", func() bool { n, _ := tr.session(sid).p.busy(); return n == 1 })
}

// TestRepliesFollowAccept: a client that accepts SSE gets its reply as an
// SSE stream, as a streamable HTTP server's own transport answers; one
// that accepts JSON only gets JSON.
func TestRepliesFollowAccept(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", nil)
	sid := initialize(t, tr)
	for accept, want := range map[string]string{"application/json, text/event-stream": "text/event-stream", "application/json": "application/json"} {
		e := do(t, tr, "POST", sid, toolCall(1, "echo", map[string]any{"text": "x"}), http.Header{"Accept": {accept}})
		if got := e.header.Get("Content-Type"); got != want || text(e.last()) != "x" {
			t.Errorf("Accept %q: Content-Type %q, reply %v; want %q", accept, got, e.msgs, want)
		}
	}
}

// TestGetStreamDoesNotHoldSession: a session whose only activity is an open
// GET stream makes room for a new one; its stream ends.
func TestGetStreamDoesNotHoldSession(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", func(tr *Transport) { tr.MaxProcesses = 4 }) // a share of one
	a := initialize(t, tr)
	resp := openGet(t, tr, a)
	initialize(t, tr)
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the evicted session's GET stream ended with %v, want a clean end", err)
	}
	if e := do(t, tr, "POST", a, toolCall(1, "pid", nil), nil); e.status != 404 {
		t.Errorf("the evicted session's request = %d, want 404", e.status)
	}
}

// TestNewestSessionOutlivesOlderStreams: over its share, the caller's
// least recently used session makes room, whether or not it has a GET
// stream: a session just initialized, whose client has not opened its
// stream yet, is not the one to go (found when a conformance scenario's
// session got 404 right after its initialize while older sessions of the
// same address kept their streams).
func TestNewestSessionOutlivesOlderStreams(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "", func(tr *Transport) { tr.MaxProcesses = 8 }) // a share of two
	a := initialize(t, tr)
	openGet(t, tr, a) // a's stream stays open
	b := initialize(t, tr)
	initialize(t, tr) // over the share: one of a and b makes room
	if e := do(t, tr, "POST", b, toolCall(1, "pid", nil), nil); e.status != 200 {
		t.Errorf("the newest session's request after another initialize = %d, want 200 (the older session a, with its stream, makes room)", e.status)
	}
	if e := do(t, tr, "POST", a, toolCall(2, "pid", nil), nil); e.status != 404 {
		t.Errorf("the least recently used session's request = %d, want 404", e.status)
	}
}

// TestListensShareProcess: two 2026-07-28 listens with the same id on the
// shared process each get their own stream, its notifications naming the
// caller's own id.
func TestListensShareProcess(t *testing.T) {
	t.Parallel()
	tr, _ := start(t, "modern", nil)
	const listen = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	for range 2 {
		req := sseRequest(t, listen)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var got []string
		for len(got) < 2 && sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				m := decode(t, []byte(d))
				meta, _ := m["params"].(map[string]any)["_meta"].(map[string]any)
				got = append(got, fmt.Sprintf("%v %v", m["method"], meta["io.modelcontextprotocol/subscriptionId"]))
			}
		}
		want := []string{"notifications/subscriptions/acknowledged 7", "notifications/tools/list_changed 7"}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("listen stream = %q, want %q", got, want)
		}
	}
}

// TestAcceptsSSE: a media type's type and subtype are tokens, compared in
// ASCII without regard to case (RFC 9110 8.3.1, 5.6.2), with OWS (spaces
// and tabs) around a list element; a long s is no "s", a no-break space
// no white space.
func TestAcceptsSSE(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]bool{
		"text/event-stream":                    true,
		"application/json, TEXT/Event-Stream":  true,
		"application/json,\ttext/event-stream": true,
		"text/event-stream ;q=0.5":             true,
		"application/json":                     false,
		"text/event-\u017ftream":               false,
		"\u00a0text/event-stream":              false,
		"text/event-streams":                   false,
	} {
		req := &http.Request{Header: http.Header{"Accept": {accept}}}
		if got := acceptsSSE(req); got != want {
			t.Errorf("acceptsSSE(Accept: %q) = %v, want %v", accept, got, want)
		}
	}
}
