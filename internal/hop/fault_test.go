package hop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/faultserver"
)

// echoed is faultserver.EchoReply's reply, decoded.
type echoed struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		Caller string `json:"caller"`
	} `json:"result"`
}

// call posts a JSON-RPC request with id and credential through tr and
// returns the reply it got, or an error.
func call(tr *Transport, url string, id int, credential string) (echoed, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call"}`, id)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return echoed{}, err
	}
	if credential != "" {
		req.Header.Set("Authorization", credential)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return echoed{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return echoed{}, err
	}
	var e echoed
	if err := json.Unmarshal(b, &e); err != nil {
		return echoed{}, fmt.Errorf("reply %q: %w", b, err)
	}
	return e, nil
}

func wantOwn(t *testing.T, got echoed, err error, id int, credential string) {
	t.Helper()
	if err != nil {
		t.Fatalf("caller %d (%s): %v", id, credential, err)
	}
	if string(got.ID) != fmt.Sprint(id) || got.Result.Caller != credential {
		t.Fatalf("caller %d (%s) got the reply of id %s for %q", id, credential, got.ID, got.Result.Caller)
	}
}

// TestCallersNeverGetAnotherCallersReply reproduces the fault it guards against: an upstream
// that answers, then writes a second complete response on the same
// connection (or sends a body longer than its Content-Length, a stray
// byte, or closes); five callers with different credentials send requests
// 10 ms apart, and each gets exactly its own reply, every round. Before the
// fix a connection pooled for less than 100 ms was reused unchecked and the
// fourth caller read the first caller's reply. The fault comes 1 ms after
// the reply, and each call waits until it is on the wire (or the connection
// closed), so a late timer cannot put it after the connection's next
// request; each connection is still reused about 55 ms after its last
// reply, inside the window the old code did not check.
func TestCallersNeverGetAnotherCallersReply(t *testing.T) {
	for _, mode := range []struct {
		name string
		m    faultserver.Mode
	}{
		{"unsolicited response", faultserver.Unsolicited},
		{"short Content-Length", faultserver.ShortLength},
		{"stray byte", faultserver.StrayByte},
		{"close after reply", faultserver.CloseAfter},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := faultserver.Start(t, faultserver.Options{Mode: mode.m, Delay: time.Millisecond})
			tr := &Transport{Partition: []string{"Authorization", "Cookie"}}
			t.Cleanup(tr.CloseIdleConnections)
			id := 0
			for round := range 5 {
				for caller := range 5 {
					id++
					cred := fmt.Sprintf("Bearer caller-%d", caller)
					got, err := call(tr, srv.URL, id, cred)
					wantOwn(t, got, err, id, cred)
					if mode.m == faultserver.CloseAfter {
						waitFor(t, "the connection closed", func() bool { return srv.Open() == 0 })
					} else {
						waitFor(t, "the fault to be written", func() bool { return srv.Faults() >= int64(id) })
					}
					_ = round
					time.Sleep(10 * time.Millisecond) // the spacing, not a wait for anything
				}
			}
		})
	}
}

// TestUnaskedBytesRetireTheConnection: with one caller (one partition), a
// connection on which anything unasked has arrived while it was pooled is
// closed, and the next request goes out on a fresh one. The test waits for
// the fault to be on the wire, so it does not depend on timing.
func TestUnaskedBytesRetireTheConnection(t *testing.T) {
	for _, mode := range []struct {
		name string
		m    faultserver.Mode
	}{
		{"unsolicited response", faultserver.Unsolicited},
		{"short Content-Length", faultserver.ShortLength},
		{"stray byte", faultserver.StrayByte},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := faultserver.Start(t, faultserver.Options{Mode: mode.m, Delay: time.Millisecond})
			tr := newTransport(t)
			const cred = "Bearer same"
			for id := 1; id <= 4; id++ {
				got, err := call(tr, srv.URL, id, cred)
				wantOwn(t, got, err, id, cred)
				waitFor(t, "the fault to be written", func() bool { return srv.Faults() >= int64(id) })
			}
			if n := srv.Accepted(); n != 4 {
				t.Errorf("upstream accepted %d connections for 4 requests, want 4 (none reused)", n)
			}
		})
	}
}

// TestWellBehavedUpstreamKeepsItsConnection shows the checks above cost a
// well-behaved upstream nothing: one connection for many requests.
func TestWellBehavedUpstreamKeepsItsConnection(t *testing.T) {
	srv := faultserver.Start(t, faultserver.Options{})
	tr := newTransport(t)
	for id := 1; id <= 5; id++ {
		got, err := call(tr, srv.URL, id, "Bearer a")
		wantOwn(t, got, err, id, "Bearer a")
	}
	if n := srv.Accepted(); n != 1 {
		t.Errorf("upstream accepted %d connections, want 1", n)
	}
}

// TestPartitionsNeverShareAConnection: requests with different credentials
// go out on different connections, and a request without any on its own.
func TestPartitionsNeverShareAConnection(t *testing.T) {
	srv := faultserver.Start(t, faultserver.Options{})
	tr := &Transport{Partition: []string{"Authorization", "Cookie"}}
	t.Cleanup(tr.CloseIdleConnections)
	for _, cred := range []string{"Bearer a", "Bearer b", "", "Bearer a", "Bearer b", ""} {
		if _, err := call(tr, srv.URL, 1, cred); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Accepted(); n != 3 {
		t.Errorf("upstream accepted %d connections for 3 callers, want 3", n)
	}
}

// TestFullPoolEvictsTheOldest: a pool at MaxIdle makes room for a new
// caller's connection by closing the one idle longest, and keeps no entry
// for a partition without connections.
func TestFullPoolEvictsTheOldest(t *testing.T) {
	srv := faultserver.Start(t, faultserver.Options{})
	tr := &Transport{Partition: []string{"Authorization"}, MaxIdle: 2}
	t.Cleanup(tr.CloseIdleConnections)
	for i := range 5 {
		if _, err := call(tr, srv.URL, 1, fmt.Sprint("Bearer ", i)); err != nil {
			t.Fatal(err)
		}
	}
	tr.mu.Lock()
	keys := len(tr.idle)
	tr.mu.Unlock()
	if tr.Idle() != 2 || keys != 2 {
		t.Fatalf("pool holds %d connections under %d keys, want 2 and 2", tr.Idle(), keys)
	}
	// The newest two callers are pooled: their next requests reuse.
	before := srv.Accepted()
	for _, i := range []int{3, 4} {
		if _, err := call(tr, srv.URL, 1, fmt.Sprint("Bearer ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Accepted() - before; n != 0 {
		t.Errorf("the two newest callers needed %d new connections, want 0", n)
	}
}

// TestEarlyAnswerWins: the upstream answers 401 with WWW-Authenticate as
// soon as it has read the request head, and closes while a large body is
// still being written. The caller gets that answer, not a write error.
func TestEarlyAnswerWins(t *testing.T) {
	reply := func(*http.Request, []byte) faultserver.Reply {
		return faultserver.Reply{Status: http.StatusUnauthorized,
			Header: http.Header{"Www-Authenticate": {`Bearer realm="mcp"`}, "Content-Type": {"text/plain"}},
			Body:   []byte("log in first")}
	}
	srv := faultserver.Start(t, faultserver.Options{Mode: faultserver.EarlyReply, Reply: reply})
	tr := newTransport(t)
	big := bytes.Repeat([]byte("x"), 16<<20) // more than any socket buffer holds
	for range 3 {
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		resp, body := do(t, tr, req)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer realm="mcp"` || body != "log in first" {
			t.Fatalf("got %d %q %q, want the upstream's 401", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	if tr.Idle() != 0 {
		t.Errorf("a connection the upstream did not read to the end was pooled")
	}
}

// TestResponseHeadIsBounded: an upstream that sends more head than
// MaxResponseHead (here 2 MiB of header lines before a valid body) fails
// the call with ErrResponseHeadTooLarge, where net/http's reader alone
// would read every line into memory; a head just inside the bound, sent
// after an interim 103 on the same connection, is an answer, and the
// bound does not reach into its body.
func TestResponseHeadIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	line := "X-Filler: " + strings.Repeat("a", 1000) + "\r\n"
	heads := map[string]string{
		"/huge": "HTTP/1.1 200 OK\r\n" + strings.Repeat(line, 2<<10),
		"/near": "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n" + strings.Repeat(line, (MaxResponseHead-4096)/len(line)),
	}
	body := strings.Repeat("b", 3<<20) // longer than the bound: a body is not bounded
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.WriteString(c, heads[req.URL.Path]+"Content-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
			}()
		}
	}()
	tr := newTransport(t)
	u := "http://" + ln.Addr().String()
	req, _ := http.NewRequest(http.MethodGet, u+"/huge", nil)
	if resp, err := tr.RoundTrip(req); !errors.Is(err, ErrResponseHeadTooLarge) {
		if resp != nil {
			resp.Body.Close()
		}
		t.Errorf("2 MiB of head: %v, want ErrResponseHeadTooLarge", err)
	}
	req, _ = http.NewRequest(http.MethodGet, u+"/near", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("a head inside the bound: %v", err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || err != nil || string(got) != body {
		t.Errorf("a head inside the bound: %d, %d bytes of body, %v; want 200 and the 3 MiB body", resp.StatusCode, len(got), err)
	}
}

// TestPoolKeyOfCredentials: the key of a request with credentials costs one
// allocation (its string) and tells apart what differs anywhere in the
// values, past the room it is laid out in too; values split differently
// across fields do not collide, and a request without any costs nothing.
func TestPoolKeyOfCredentials(t *testing.T) {
	tr := &Transport{Partition: []string{"Authorization", "Cookie"}}
	key := func(h http.Header) string {
		return tr.poolKey("up:80", &http.Request{Header: h})
	}
	long := strings.Repeat("x", 3000)
	seen := map[string]string{}
	for _, h := range []http.Header{
		{},
		{"Authorization": {"Bearer a"}},
		{"Authorization": {"Bearer b"}},
		{"Authorization": {""}},
		{"Authorization": {"Bearer a"}, "Cookie": {"s=1"}},
		{"Authorization": {"Bearer a", "s=1"}},
		{"Authorization": {"Bearer as=1"}},
		{"Authorization": {"Bearer " + long + "1"}},
		{"Authorization": {"Bearer " + long + "2"}},
	} {
		k := key(h)
		if prev, dup := seen[k]; dup {
			t.Errorf("%v and %s have the same key", h, prev)
		}
		seen[k] = fmt.Sprint(h)
		if strings.Contains(k, "Bearer") || strings.Contains(k, "s=1") {
			t.Errorf("the key of %v holds a credential: %q", h, k)
		}
	}
	if k := key(http.Header{}); k != "up:80" {
		t.Errorf("the key of a request without credentials is %q, want the address", k)
	}
	if k1, k2 := key(http.Header{"Authorization": {"Bearer a"}}), key(http.Header{"Authorization": {"Bearer a"}}); k1 != k2 {
		t.Errorf("one credential, two keys: %q, %q", k1, k2)
	}
	h := http.Header{"Authorization": {"Bearer eyJhbGciOiJSUzI1NiJ9.payload.signature"}}
	if a := testing.AllocsPerRun(100, func() { key(h) }); a > 1 {
		t.Errorf("a key of a request with credentials costs %v allocations, want 1", a)
	}
	if a := testing.AllocsPerRun(100, func() { key(http.Header{}) }); a > 0 {
		t.Errorf("a key of a request without credentials costs %v allocations, want 0", a)
	}
}

// errGone is the error of a request body whose client went away.
var errGone = errors.New("the client went away")

// failingBody gives a few bytes, then fails as a client's body does when
// the client leaves part-way.
type failingBody struct{ sent bool }

func (b *failingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "partial body"), nil
	}
	return 0, errGone
}

func (b *failingBody) Close() error { return nil }

// TestRequestFailingPartWayFailsAtOnce: a request streamed through net/http's
// writer (length unknown, or larger than goes in one write) fails part-way
// on its own account: its body's Read fails, or its body is shorter than
// its ContentLength. The upstream has the head and some of the body and
// waits for the rest, so no answer is coming: the round trip fails with the
// request's error while the caller is still there, as net/http's
// Transport's does on the same bytes.
func TestRequestFailingPartWayFailsAtOnce(t *testing.T) {
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		_, _ = io.Copy(io.Discard, br) // reads on, answers nothing
	})
	for _, tc := range []struct {
		name   string
		method string
		body   func() io.ReadCloser
		length int64
		want   func(error) bool
	}{
		{"body fails", http.MethodPut, func() io.ReadCloser { return &failingBody{} }, -1,
			func(err error) bool { return errors.Is(err, errGone) }},
		{"body shorter than its length", http.MethodPost, func() io.ReadCloser { return io.NopCloser(strings.NewReader("short")) }, 100 << 10,
			func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "ContentLength=102400 with Body length 5")
			}},
	} {
		for _, rt := range []struct {
			name string
			rt   http.RoundTripper
		}{{"net/http", &http.Transport{}}, {"hop", &Transport{}}} {
			t.Run(tc.name+"/"+rt.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, tc.method, url, tc.body())
				req.ContentLength = tc.length
				resp, err := rt.rt.RoundTrip(req)
				if resp != nil {
					resp.Body.Close()
				}
				if ctx.Err() != nil || !tc.want(err) {
					t.Errorf("RoundTrip: %v (the caller's context: %v); want the request's own error before the caller leaves", err, ctx.Err())
				}
			})
		}
	}
}

// TestEarlyAnswerOutlastsABlockedWrite: with ResponseHeaderTimeout set,
// the upstream reads the head, then for longer than the timeout reads
// none of a body too large for the socket buffers, then answers 401 and
// closes. The write that blocked meanwhile fails; the answer that came is
// the reply, as with no timeout: the timeout bounds the wait for an answer
// from when the request is out, and the write never ended.
func TestEarlyAnswerOutlastsABlockedWrite(t *testing.T) {
	const timeout = 200 * time.Millisecond
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		time.Sleep(5 * timeout) // none of the body read meanwhile
		_, _ = io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 12\r\n\r\nlog in first")
	}) // and closes, the body unread: the kernel resets the connection
	tr := &Transport{ResponseHeaderTimeout: timeout}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(bytes.Repeat([]byte("x"), 16<<20)))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v; want the upstream's 401", err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusUnauthorized || string(body) != "log in first" {
		t.Errorf("got %d %q, want the upstream's 401", resp.StatusCode, body)
	}
}

// hangGuard is how long a test waits for what a correct Transport does at
// once before it counts as never: a guard against a hang, not a measure
// of speed.
const hangGuard = 30 * time.Second
