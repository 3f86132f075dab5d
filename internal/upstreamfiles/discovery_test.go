package upstreamfiles_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// upstreamCounter is handler middleware in front of a go-sdk upstream: it
// counts the JSON-RPC requests reaching it by method, and the most of each
// method in flight at once. delay holds each resources/* request that long,
// so that concurrent requests overlap.
//
// A request stops being in flight when the handler starts its reply (its
// first WriteHeader, Write or Flush), not when the handler returns: the
// go-sdk handler flushes its SSE reply and then still runs, so the sidecar
// may have read the reply, freed its slot and sent the next request before
// the handler returns, and a count taken then saw one request too many.
// Starting the reply is before any byte of it can reach the sidecar, so a
// request the sidecar sends while its bound is full is still counted.
type upstreamCounter struct {
	delay time.Duration

	mu       sync.Mutex
	count    map[string]int
	inFlight map[string]int
	maxIn    map[string]int
	reads    map[string]int // resources/read by uri
}

func (c *upstreamCounter) wrap(h http.Handler) http.Handler {
	c.count, c.inFlight, c.maxIn, c.reads = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		m, err := rewrite.ParseMessage(body)
		if err != nil || m.Kind != rewrite.KindRequest {
			h.ServeHTTP(w, r)
			return
		}
		uri, _ := rewrite.GetString(m.Params, "uri")
		c.mu.Lock()
		c.count[m.Method]++
		c.inFlight[m.Method]++
		c.maxIn[m.Method] = max(c.maxIn[m.Method], c.inFlight[m.Method])
		if m.Method == "resources/read" {
			c.reads[uri]++
		}
		c.mu.Unlock()
		if strings.HasPrefix(m.Method, "resources/") {
			time.Sleep(c.delay)
		}
		var once sync.Once
		done := func() {
			once.Do(func() {
				c.mu.Lock()
				c.inFlight[m.Method]--
				c.mu.Unlock()
			})
		}
		h.ServeHTTP(&replyStart{ResponseWriter: w, start: done}, r)
		done() // a handler that wrote nothing
	})
}

// replyStart calls start before the first byte of a reply is written.
type replyStart struct {
	http.ResponseWriter
	start func()
}

func (w *replyStart) WriteHeader(code int) { w.start(); w.ResponseWriter.WriteHeader(code) }

func (w *replyStart) Write(b []byte) (int, error) { w.start(); return w.ResponseWriter.Write(b) }

func (w *replyStart) Flush() {
	w.start()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *replyStart) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// resourceRequests is how many resources/* requests reached the upstream.
func (c *upstreamCounter) resourceRequests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for m, k := range c.count {
		if strings.HasPrefix(m, "resources/") {
			n += k
		}
	}
	return n
}

func (c *upstreamCounter) get(method string) (count, maxInFlight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[method], c.maxIn[method]
}

// discoveryPlugin writes a plugin folder of skills, each with a SKILL.md
// (CRLF line ends) and files extra files, and loads it.
func discoveryPlugin(t testing.TB, skills []string, files int) *catalog.Snapshot {
	t.Helper()
	root := t.TempDir()
	for _, name := range skills {
		dir := filepath.Join(root, "skills", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\r\nname: " + name + "\r\ndescription: The " + name + " skill.\r\n---\r\n# " + name + "\r\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		for i := range files {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("ref%d.md", i)), []byte("ref\r\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap, err := catalog.Load(root, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// lfServed is what a normalising upstream serves for a plugin file: its
// text with CRLF rewritten to LF (discoveryPlugin's bytes, so the test
// knows them without asking the sidecar).
func lfServed(snap *catalog.Snapshot, uri string) string {
	f, _ := snap.File(uri)
	return strings.ReplaceAll(string(f.Data), "\r\n", "\n")
}

// callAs posts one 2026-07-28 request with the headers hdr and returns the
// result, or an error (usable from any goroutine).
func callAs(u string, hdr map[string]string, method string, params map[string]any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if uri, ok := params["uri"].(string); ok {
		req.Header.Set("Mcp-Name", uri)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	b = messageOf(resp.Header, b)
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Error != nil || m.Result == nil {
		return nil, fmt.Errorf("%s: HTTP %d %s", method, resp.StatusCode, b)
	}
	return m.Result, nil
}

// messageOf is the JSON-RPC message of a reply to a request with id 1:
// the body, or of an SSE body the data of the event that carries id 1.
func messageOf(h http.Header, b []byte) []byte {
	if strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id":1`) {
				b = []byte(d)
			}
		}
	}
	return b
}

// skillsOf decodes a skills/list result into its entries by URI.
func skillsOf(t *testing.T, res json.RawMessage) map[string]entry {
	t.Helper()
	var l struct {
		Skills []entry `json:"skills"`
	}
	if err := json.Unmarshal(res, &l); err != nil {
		t.Fatal(err)
	}
	out := map[string]entry{}
	for _, e := range l.Skills {
		out[e.URI] = e
	}
	return out
}

// junkCookie is a fresh random credential: a new authorization context.
func junkCookie() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "session=" + hex.EncodeToString(b[:])
}

// TestDiscoveryTemplateServedFiles: a go-sdk upstream that serves one
// skill's files through a URI template (and normalises CRLF to LF) wins for
// those files: the published digests are of its bytes, learned with one
// listing of each kind and one read per file it serves; the other skill's
// files are the plugin's, and never read.
func TestDiscoveryTemplateServedFiles(t *testing.T) {
	t.Parallel()
	snap := discoveryPlugin(t, []string{"notes", "other"}, 2)
	s := mcp.NewServer(&mcp.Implementation{Name: "templated", Version: "1"}, nil)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "skill://notes/{file}", Name: "notes files"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if _, ok := snap.File(r.Params.URI); !ok {
				return nil, mcp.ResourceNotFoundError(r.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: lfServed(snap, r.Params.URI)}}}, nil
		})
	c := &upstreamCounter{}
	up := testupstream.ServeHandler(t, c.wrap(testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})))
	side, _ := overlaySidecarFor(t, up.URL, snap)

	res, err := callAs(side, nil, "skills/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := skillsOf(t, res)
	for _, uri := range []string{"skill://notes/SKILL.md", "skill://notes/ref0.md", "skill://notes/ref1.md"} {
		if d := publishedDigest(t, got["skill://notes/SKILL.md"], uri); d != digestOf(lfServed(snap, uri)) {
			t.Errorf("%s published %s, want the digest of the upstream's LF bytes %s", uri, d, digestOf(lfServed(snap, uri)))
		}
	}
	for _, uri := range []string{"skill://other/SKILL.md", "skill://other/ref0.md"} {
		f, _ := snap.File(uri)
		if d := publishedDigest(t, got["skill://other/SKILL.md"], uri); d != digestOf(string(f.Data)) {
			t.Errorf("%s published %s, want the plugin file's %s", uri, d, digestOf(string(f.Data)))
		}
	}
	if n, _ := c.get("resources/list"); n != 1 {
		t.Errorf("resources/list reached the upstream %d times, want 1", n)
	}
	if n, _ := c.get("resources/templates/list"); n != 1 {
		t.Errorf("resources/templates/list reached the upstream %d times, want 1", n)
	}
	c.mu.Lock()
	reads := fmt.Sprint(c.reads)
	c.mu.Unlock()
	if want := "map[skill://notes/SKILL.md:1 skill://notes/ref0.md:1 skill://notes/ref1.md:1]"; reads != want {
		t.Errorf("reads at the upstream: %s, want %s", reads, want)
	}
	// A forwarded read returns the upstream's bytes, and costs one request.
	before := c.resourceRequests()
	rd, err := callAs(side, nil, "resources/read", map[string]any{"uri": "skill://notes/ref0.md"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rd), `"text":"ref\n"`) {
		t.Errorf("read of a template-served file: %s, want the upstream's LF text", rd)
	}
	if n := c.resourceRequests() - before; n != 1 {
		t.Errorf("a forwarded read cost %d upstream requests, want 1 (no probe before it)", n)
	}
}

// TestDiscoveryAsksNothingWithoutResources: a go-sdk upstream that declares
// no resources capability (it has a tool and nothing else), met by a client
// that initialized through the sidecar, is asked nothing about resources,
// whoever lists the skills.
func TestDiscoveryAsksNothingWithoutResources(t *testing.T) {
	t.Parallel()
	snap := discoveryPlugin(t, []string{"notes"}, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "tools-only", Version: "1"}, nil)
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	c := &upstreamCounter{}
	up := testupstream.ServeHandler(t, c.wrap(testupstream.Handler(s, nil)))
	side, _ := overlaySidecarFor(t, up.URL, snap)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	connect := func(endpoint string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	// Asked directly, the upstream declares no resources (through the
	// sidecar, the sidecar's own skill files are declared).
	if connect(up.URL).InitializeResult().Capabilities.Resources != nil {
		t.Fatal("the upstream declares resources; the test needs one that does not")
	}
	connect(side)
	for i := range 10 {
		hdr := map[string]string{"Cookie": junkCookie()}
		if i%2 == 0 {
			hdr = map[string]string{"Authorization": "Bearer " + junkCookie()}
		}
		if _, err := callAs(side, hdr, "skills/list", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.resourceRequests(); n != 0 {
		c.mu.Lock()
		t.Errorf("the upstream got %d resources/* requests (%v), want none", n, c.count)
		c.mu.Unlock()
	}
}

// TestDiscoveryJunkCookiesBounded: callers with random cookies, each a new
// authorization context, cost one discovery each (one resources/list and
// one resources/templates/list against an upstream serving none of the
// catalog, and no reads), and no more than DefaultMaxDiscoveries of them
// reach the upstream at once, however many callers arrive together.
func TestDiscoveryJunkCookiesBounded(t *testing.T) {
	t.Parallel()
	snap := discoveryPlugin(t, []string{"a", "b", "c"}, 3)
	s := mcp.NewServer(&mcp.Implementation{Name: "unrelated", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "test://unrelated", Name: "unrelated"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	c := &upstreamCounter{delay: 20 * time.Millisecond}
	up := testupstream.ServeHandler(t, c.wrap(testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})))
	side, _ := overlaySidecarFor(t, up.URL, snap)

	const callers = 64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := callAs(side, map[string]string{"Cookie": junkCookie()}, "skills/list", nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	lists, maxLists := c.get("resources/list")
	templates, _ := c.get("resources/templates/list")
	reads, _ := c.get("resources/read")
	if lists != callers || templates != callers || reads != 0 {
		t.Errorf("%d new callers caused %d resources/list, %d templates/list, %d reads; want %d, %d, 0", callers, lists, templates, reads, callers, callers)
	}
	if maxLists > upstreamfiles.DefaultMaxDiscoveries {
		t.Errorf("%d resources/list were in flight at once, want at most %d", maxLists, upstreamfiles.DefaultMaxDiscoveries)
	}
	t.Logf("at most %d discoveries in flight for %d concurrent new callers", maxLists, callers)
}

// TestDiscoverySharedByConcurrentCallers: concurrent first requests of one
// authorization context (the same credentials) share one discovery and one
// read of each file the upstream serves; reads of a page's files run a few
// at a time, never more than DefaultFileReads.
func TestDiscoverySharedByConcurrentCallers(t *testing.T) {
	t.Parallel()
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("s%02d", i)
	}
	snap := discoveryPlugin(t, names, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "serving", Version: "1"}, nil)
	for _, n := range names { // the upstream lists every SKILL.md (not the ref files)
		uri := "skill://" + n + "/SKILL.md"
		s.AddResource(&mcp.Resource{URI: uri, Name: n}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: lfServed(snap, uri)}}}, nil
		})
	}
	c := &upstreamCounter{delay: 20 * time.Millisecond}
	up := testupstream.ServeHandler(t, c.wrap(testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: true})))
	side, _ := overlaySidecarFor(t, up.URL, snap)

	const callers = 32
	var wg sync.WaitGroup
	results := make(chan json.RawMessage, callers)
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := callAs(side, map[string]string{"Authorization": "Bearer same"}, "skills/list", nil)
			results <- res
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	close(results)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for res := range results {
		got := skillsOf(t, res)
		for _, n := range names {
			uri := "skill://" + n + "/SKILL.md"
			if d := publishedDigest(t, got[uri], uri); d != digestOf(lfServed(snap, uri)) {
				t.Fatalf("%s published %s, want the upstream's %s", uri, d, digestOf(lfServed(snap, uri)))
			}
		}
	}
	lists, _ := c.get("resources/list")
	templates, _ := c.get("resources/templates/list")
	reads, maxReads := c.get("resources/read")
	if lists != 1 || templates != 1 || reads != len(names) {
		t.Errorf("%d concurrent requests of one context caused %d resources/list, %d templates/list, %d reads; want 1, 1, %d", callers, lists, templates, reads, len(names))
	}
	if maxReads > upstreamfiles.DefaultFileReads {
		t.Errorf("%d reads were in flight at once, want at most %d", maxReads, upstreamfiles.DefaultFileReads)
	}
	t.Logf("reads in flight at once: at most %d", maxReads)
}
