package methods_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// vmRSS returns the process's resident set from /proc, or 0 off Linux.
func vmRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb uint64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// rawRequest sends one request on its own connection; stalled, its
// receive buffer is small, so that a client that never reads soon blocks
// the server (a buffer that small slows a reading client to a crawl).
func rawRequest(t *testing.T, addr, body string, stalled bool) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if stalled {
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	}
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: s\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	return c
}

// countedSidecar is the assembled sidecar serving snap in front of
// upstream, with no auth gate and upstream-files as given, counting in
// active the requests it is serving; it returns the sidecar's host:port.
func countedSidecar(t *testing.T, upstream string, snap *catalog.Snapshot, upstreamFiles string, active *atomic.Int32) string {
	t.Helper()
	s := sidecartest.Start(t, upstream, sidecartest.Options{
		Snapshot: func() *catalog.Snapshot { return snap },
		Config:   func(c *config.Config) { c.AuthGate, c.UpstreamFiles, c.UpstreamFilesTTL = "none", upstreamFiles, 0 },
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				active.Add(1)
				defer active.Add(-1)
				h.ServeHTTP(w, r)
			})
		},
	})
	return strings.TrimPrefix(s.Server.URL, "http://")
}

// settle waits until the allocation counter stops moving: every stalled
// reply has written what the socket takes and blocked.
func settle(t *testing.T) {
	t.Helper()
	var last uint64
	for range 100 { // at most 10 s
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.TotalAlloc == last {
			return
		}
		last = m.TotalAlloc
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSlowReadersShareOneFile: ten clients that ask for a 12 MB skill
// file the sidecar serves and never read the reply cost the sidecar no
// copy of the file each: the live heap grows by much
// less than one encoded copy, where it grew by ten (16 MB each, as
// base64), and so does the process's resident set.
func TestSlowReadersShareOneFile(t *testing.T) {
	root := t.TempDir()
	data := make([]byte, 12<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	// Two skills, each under the 16 MiB limit: a blob, and text that
	// needs escapes (quotes, <, >, U+2028) and has multi-byte runes that
	// chunks must not split.
	sidecartest.WriteTree(t, root, map[string]string{
		"skills/big/SKILL.md": "---\nname: big\ndescription: Big.\n---\n", "skills/big/data.bin": string(data),
		"skills/text/SKILL.md": "---\nname: text\ndescription: Text.\n---\n",
		"skills/text/notes.md": strings.Repeat("Text that is escaped \"here\" and <there>, é, \u2028.\n", 12<<20/56),
	})
	snap, err := catalog.Load(root, catalog.Options{})
	if err != nil || len(snap.Skills()) != 2 {
		t.Fatalf("load: %v, problems %v", err, snap.Problems())
	}
	up := httptest.NewServer(http.NotFoundHandler()) // never asked: the sidecar serves these files
	t.Cleanup(up.Close)
	var active atomic.Int32
	addr := countedSidecar(t, up.URL, snap, "off", &active)

	for _, uri := range []string{"skill://big/data.bin", "skill://text/notes.md"} {
		t.Run(uri, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `"}}`
			// One whole read first: the reply is right, and what is cached
			// once per file (its encoded length) is in the baseline.
			c := rawRequest(t, addr, body, false)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("read %s: %v %v", uri, resp, err)
			}
			var n int64
			for buf := make([]byte, 1<<20); ; {
				m, err := resp.Body.Read(buf)
				n += int64(m)
				if err != nil {
					break
				}
			}
			c.Close()
			if n != resp.ContentLength || n < int64(len(data)) || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("read %s: %d bytes of a %d-byte Content-Length", uri, n, resp.ContentLength)
			}

			before, rssBefore := heapInUse(), vmRSS()
			var conns []net.Conn
			for range 10 {
				conns = append(conns, rawRequest(t, addr, body, true))
			}
			for i := 0; active.Load() < 10 && i < 1000; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			settle(t)
			held, rss := heapInUse(), vmRSS()
			grew := int64(held) - int64(before)
			t.Logf("10 stalled readers of %s: live heap %+d bytes (%.2f MiB), process RSS %.1f MiB (%+.1f MiB)", uri, grew, float64(grew)/(1<<20), float64(rss)/(1<<20), (float64(rss)-float64(rssBefore))/(1<<20))
			if active.Load() != 10 {
				t.Fatalf("%d replies in flight, want the 10 stalled ones", active.Load())
			}
			// One encoded copy is 16 MiB; ten clients may together hold a
			// few of their chunk buffers' worth, never a copy.
			if limit := int64(4 << 20); grew > limit {
				t.Errorf("10 stalled readers grew the live heap by %d bytes, want under %d (no copy of the file per reader)", grew, limit)
			}
			// The test binary's own RSS (other tests, the race detector's
			// shadow memory) says nothing of a sidecar's; what the stalled
			// readers add to it does. docs/security.md's Limits has the binary's.
			if rss > rssBefore && rss-rssBefore > 32<<20 {
				t.Errorf("10 stalled readers grew the process RSS by %.1f MiB, want under 32 MiB", float64(rss-rssBefore)/(1<<20))
			}
			for _, c := range conns {
				c.Close()
			}
			for i := 0; active.Load() > 0 && i < 1000; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if active.Load() != 0 {
				t.Errorf("%d replies still in flight after their clients went away", active.Load())
			}
		})
	}
}

// TestForwardedReadReleasedOnDisconnect: a 16 MiB skill file the upstream
// serves, forwarded and hashed on its way to clients that never read it,
// holds at most the documented 3× its reply per client while they stall,
// and all of it is released once they go away.
func TestForwardedReadReleasedOnDisconnect(t *testing.T) {
	snap, data := sidecartest.BigSkill(t)
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{
		"contents": []any{map[string]any{"uri": sidecartest.BigFileURI, "blob": base64.StdEncoding.EncodeToString(data)}}}})
	reply := []byte("event: message\ndata: " + string(msg) + "\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(reply)
	}))
	t.Cleanup(up.Close)
	var active atomic.Int32
	addr := countedSidecar(t, up.URL, snap, "auto", &active)
	body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + sidecartest.BigFileURI + `"}}`

	// Warm: the overlay learns the upstream serves the file, pools fill.
	c := rawRequest(t, addr, body, false)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := io.Copy(io.Discard, resp.Body); n < int64(len(reply)) {
		t.Fatalf("warm read: %d bytes, want the %d-byte reply", n, len(reply))
	}
	c.Close()

	const clients = 3
	before := heapInUse()
	var conns []net.Conn
	for range clients {
		conns = append(conns, rawRequest(t, addr, body, true))
	}
	for i := 0; active.Load() < clients && i < 1000; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	settle(t)
	held := int64(heapInUse()) - int64(before)
	t.Logf("%d stalled readers of a %d-byte forwarded reply hold %+d bytes (%.2f× the reply each)", clients, len(reply), held, float64(held)/clients/float64(len(reply)))
	if active.Load() != clients {
		t.Fatalf("%d replies in flight, want the %d stalled ones", active.Load(), clients)
	}
	if limit := int64(clients) * int64(len(reply)) * 3; held > limit {
		t.Errorf("%d stalled readers hold %d bytes, want at most 3× the %d-byte reply each (%d)", clients, held, len(reply), limit)
	}
	for _, c := range conns {
		c.Close()
	}
	for i := 0; active.Load() > 0 && i < 1000; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if active.Load() != 0 {
		t.Fatalf("%d replies still in flight after their clients went away", active.Load())
	}
	after := int64(heapInUse()) - int64(before)
	t.Logf("after the clients went away: %+d bytes", after)
	// A reply kept would be its whole size; a quarter of one leaves room
	// for what the assembled sidecar's background work (era probes, the
	// bridge) allocates meanwhile.
	if limit := int64(len(reply)) / 4; after > limit {
		t.Errorf("%d bytes still held after the stalled clients went away, want none of their replies (under a quarter of one, %d)", after, limit)
	}
}
