package h1fault

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// faults are the faults brokenServer adds, on request, to those it
// always has.
type faults struct {
	continueTo10    bool          // answers Expect: 100-continue with a 100 whatever the request's version
	dropOnHalfClose bool          // drops a request, unanswered, when the client has half-closed after it
	rawPath         bool          // takes the request-target as the path: no absolute-form
	closeAfterReply bool          // closes after the first reply, with no Connection: close
	closeOnAccept   bool          // closes every connection as it accepts it
	idleClose       time.Duration // closes a connection that sends nothing for this long
	// headsBy bounds every head by one deadline, this long after the
	// connection opened, never moved for the heads after the first.
	headsBy time.Duration
	// reset resets the connection (rather than closing it): on a request
	// with Transfer-Encoding, on /panic, and on the input that follows
	// a /nobody reply (answered "early" without reading the body).
	reset bool
	// hostCheck answers 400 (Content-Length: 0) to an HTTP/1.1 request
	// without Host and reads on; with junkAfter400 it writes "junk" after
	// that 400, bytes no framing accounts for.
	hostCheck, junkAfter400 bool
	// firstHeadBound answers 431 (and closes) to a connection's first
	// head if it is longer than this, and bounds no head after it.
	firstHeadBound int
}

// brokenServer is a deliberately faulty HTTP/1.1 server for the suite to
// catch: it frames a body by Content-Length even beside Transfer-Encoding
// (and ignores Transfer-Encoding otherwise), takes a Content-Length it
// cannot parse as 0, checks no Host, has no bound
// on a head and no timeout, and keeps every connection open. It answers
// every request as /echo does. f adds faults.
func brokenServer(t *testing.T, f faults) string {
	return serveTestConns(t, func(c net.Conn) { brokenConn(c, f) })
}

// serveTestConns accepts loopback connections until the test ends and runs
// serve on each on its own goroutine, closing it after; at the end it
// closes the listener and every connection and waits for them.
func serveTestConns(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return l.Addr().String()
}

// reset closes c with a reset: no lingering, so the kernel sends RST.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func brokenConn(c net.Conn, f faults) {
	if f.closeOnAccept {
		return
	}
	br := bufio.NewReader(c)
	if f.headsBy > 0 {
		c.SetReadDeadline(time.Now().Add(f.headsBy))
	}
	for heads := 0; ; heads++ {
		if f.idleClose > 0 {
			c.SetReadDeadline(time.Now().Add(f.idleClose))
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if f.idleClose > 0 {
			c.SetReadDeadline(time.Time{})
		}
		parts := strings.Fields(line)
		if len(parts) != 3 {
			return
		}
		hdr := map[string]string{}
		size := len(line)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if size += len(l); f.firstHeadBound > 0 && heads == 0 && size > f.firstHeadBound {
				io.WriteString(c, "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				return
			}
			l = strings.TrimRight(l, "\r\n")
			if l == "" {
				break
			}
			if k, v, ok := strings.Cut(l, ":"); ok {
				hdr[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if f.reset && (hdr["transfer-encoding"] != "" || strings.HasPrefix(parts[1], "/panic")) {
			reset(c)
			return
		}
		if f.reset && strings.HasPrefix(parts[1], "/nobody") {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nearly")
			c.SetReadDeadline(time.Now().Add(never))
			br.Peek(1)
			reset(c)
			return
		}
		if f.hostCheck && parts[2] == "HTTP/1.1" && hdr["host"] == "" {
			out := "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
			if f.junkAfter400 {
				out += "junk"
			}
			if _, err := io.WriteString(c, out); err != nil {
				return
			}
			continue
		}
		if f.continueTo10 && strings.EqualFold(hdr["expect"], "100-continue") {
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		n, err := strconv.Atoi(hdr["content-length"])
		if err != nil || n < 0 {
			n = 0 // Atoi's out-of-range answer is its largest int
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		if f.dropOnHalfClose {
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := br.Peek(1); err == io.EOF {
				return
			}
			c.SetReadDeadline(time.Time{})
		}
		u, _ := url.ParseRequestURI(parts[1])
		path := parts[1]
		if u != nil && !f.rawPath {
			path = u.Path
		}
		sum := sha256.Sum256(body)
		out := fmt.Sprintf("method=%s\ntarget=%s\npath=%s\nhost=%s\nproto=%s\nx-probe=%q\nbody-len=%d\nbody-sha256=%s\n",
			parts[0], parts[1], path, hdr["host"], parts[2], hdr["x-probe"], len(body), hex.EncodeToString(sum[:]))
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(out), out); err != nil {
			return
		}
		if f.closeAfterReply {
			return
		}
	}
}

// brokenMustFail are the cases brokenServer's standing faults fail: its
// framing (Content-Length beside or without Transfer-Encoding, any
// Transfer-Encoding ignored, a Content-Length it cannot parse taken as
// 0), its lenient field parsing (a field line taken whatever its
// whitespace, control bytes or name), its missing Host checks, bounds
// and timeouts, and its keeping every connection open.
var brokenMustFail = []string{
	"rfc9112-6.1/transfer-encoding-in-http10-closes",
	"rfc9112-6.3/item-3-content-length-and-chunked",
	"rfc9112-6.3/item-4-transfer-encoding-without-chunked",
	"rfc9112-6.3/item-4-chunked-not-final-coding",
	"rfc9112-6.1/transfer-encoding-xchunked",
	"net/http/chunked-applied-twice",
	"rfc9112-7/transfer-coding-name-case-insensitive",
	"rfc9112-6.3/item-5-two-differing-content-lengths",
	"rfc9112-6.3/item-5-content-length-list-differing",
	"rfc9112-6.3/item-5-content-length-plus-sign",
	"rfc9112-6.3/item-5-content-length-negative",
	"rfc9110-8.6/content-length-overflowing-integers",
	"rfc9110-8.6/content-length-same-value-listed",
	"rfc9112-7.1/chunk-size-hex-junk",
	"rfc9112-2.2/bare-cr-in-field-value",
	"rfc9112-2.2/whitespace-before-first-field",
	"rfc9112-5.1/space-before-colon",
	"rfc9112-5.2/obs-fold",
	"rfc9110-5.5/nul-in-field-value",
	"rfc9110-5.1/field-name-not-a-token",
	"rfc9112-3.2.2/absolute-form-host-wins-over-host-field",
	"rfc9112-3.2.4/asterisk-form-with-get",
	"rfc9112-3.2/http11-without-host",
	"rfc9112-3.2/two-host-fields",
	"rfc9112-3.2/invalid-host-value",
	"rfc6585-5/head-one-over-max-header-bytes-431",
	"rfc6585-5/head-far-over-max-header-bytes-431",
	"net/http/malformed-head-far-over-max-header-bytes-431-first-or-pipelined",
	"rfc9112-3/request-target-too-long-414",
	"rfc9112-9.5/head-dripped-past-read-header-timeout-cut-off",
	"rfc9112-9.5/idle-keep-alive-closed-after-idle-timeout",
	"rfc9112-9.5/silent-new-connection-closed",
	"rfc9112-9.6/connection-close-closes-after-reply",
	"rfc9112-9.3/http10-closes-without-keep-alive",
}

// TestCasesCatchABrokenServer: the cases for each of brokenServer's
// faults fail against it, and a case it does not break passes (so the
// failures come from the faults, not from a server too broken to answer).
func TestCasesCatchABrokenServer(t *testing.T) {
	addr := brokenServer(t, faults{})
	mustPass := []string{"rfc9112-9.3.2/three-pipelined-in-one-write", "rfc9112-5.1/content-length-with-ows-is-5",
		"rfc9112-9.5/pipelined-head-in-parts-gets-its-own-read-header-timeout"}
	judge(t, addr, opts, brokenMustFail, mustPass)
}

// judge runs the cases (for a server with limits o) named in mustFail,
// each of which must fail against the server at addr, and those in
// mustPass, each of which must pass.
func judge(t *testing.T, addr string, o Options, mustFail, mustPass []string) {
	t.Helper()
	byName := map[string]Case{}
	for _, c := range Cases(o) {
		byName[c.Name] = c
	}
	for _, name := range append(mustFail, mustPass...) {
		c, ok := byName[name]
		if !ok {
			t.Fatalf("no case %s", name)
		}
		pass := strings.Contains(strings.Join(mustPass, " "), name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := c.Run(addr)
			switch {
			case pass && err != nil:
				t.Errorf("fails against the broken server, which does this right: %v", err)
			case !pass && err == nil:
				t.Error("passes against a server with the fault")
			default:
				t.Logf("as it should: %v", err)
			}
		})
	}
}

// moreFaults are brokenServer's faults added one at a time, each with
// the cases it must fail and one it must leave passing (TestCasesCatchMoreFaults).
var moreFaults = []struct {
	name     string
	f        faults
	mustFail []string
	mustPass []string
	o        Options
}{
	{"100-continue-to-http10", faults{continueTo10: true},
		[]string{"rfc9110-15.2/no-100-continue-to-http10"},
		[]string{"rfc9110-10.1.1/100-continue-before-final-reply"}, opts},
	{"drop-on-half-close", faults{dropOnHalfClose: true},
		[]string{"net/http/half-closed-client-still-answered"},
		[]string{"rfc9112-9.3.2/three-pipelined-in-one-write"}, opts},
	{"no-absolute-form", faults{rawPath: true},
		[]string{"rfc9112-3.2.2/absolute-form-accepted"},
		[]string{"rfc9112-5.1/content-length-with-ows-is-5"}, opts},
	{"no-keep-alive", faults{closeAfterReply: true},
		[]string{"rfc9112-9.5/idle-keep-alive-closed-after-idle-timeout"},
		[]string{"rfc9112-9.3/http10-closes-without-keep-alive"}, idleOpts},
	{"idle-timeout-a-thirtieth", faults{idleClose: idleOpts.ReadHeaderTimeout / 30},
		[]string{"rfc9112-9.5/idle-keep-alive-closed-after-idle-timeout", "rfc9112-9.5/silent-new-connection-closed"},
		[]string{"rfc9112-9.3.2/three-pipelined-in-one-write"}, idleOpts},
	{"heads-by-one-deadline", faults{headsBy: idleOpts.ReadHeaderTimeout},
		[]string{"rfc9112-9.5/pipelined-head-in-parts-gets-its-own-read-header-timeout"},
		[]string{"rfc9112-9.3.2/three-pipelined-in-one-write"}, idleOpts},
	{"close-on-accept", faults{closeOnAccept: true},
		[]string{"rfc9112-9.5/silent-new-connection-closed", "rfc9112-9.5/idle-keep-alive-closed-after-idle-timeout"},
		nil, idleOpts},
	{"host-check-reads-on", faults{hostCheck: true}, nil,
		[]string{"rfc9112-3.2/http11-without-host"}, opts},
	{"junk-after-400", faults{hostCheck: true, junkAfter400: true},
		[]string{"rfc9112-3.2/http11-without-host"}, nil, opts},
	{"first-head-bound-only", faults{firstHeadBound: opts.MaxHeaderBytes},
		[]string{"net/http/malformed-head-far-over-max-header-bytes-431-first-or-pipelined"},
		[]string{"rfc6585-5/head-far-over-max-header-bytes-431"}, opts},
	{"reset", faults{reset: true}, nil,
		[]string{"rfc9112-7.1/chunk-size-hex-junk", "rfc9112-7.1/chunk-size-overflow",
			"net/http/panic-before-write-no-reply", "net/http/panic-after-write-no-complete-reply",
			"rfc9112-7.1/panic-after-flush-chunked-left-unterminated",
			"rfc9110-10.1.1/expect-unread-body-final-reply-then-close-or-drain"}, opts},
}

// idleOpts are the limits the idle faults are judged against.
var idleOpts = Options{MaxHeaderBytes: opts.MaxHeaderBytes, ReadHeaderTimeout: 3 * time.Second, IdleTimeout: 6 * time.Second}

// TestCasesCatchMoreFaults: brokenServer with one fault more at a time;
// the cases for that fault fail, and a case the fault leaves alone
// passes (so the failure is the fault's). The reset server shows the
// other side: cases that ask only for the connection to end take a reset
// as its end. The idle faults are judged as for a server with timeouts of
// seconds (idleOpts), so the early close they make is early by far more
// than a loaded machine's scheduling delay.
func TestCasesCatchMoreFaults(t *testing.T) {
	for _, tc := range moreFaults {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			judge(t, brokenServer(t, tc.f), tc.o, tc.mustFail, tc.mustPass)
		})
	}
}

// detachedMustFail are the cases a request context detached from its
// connection fails.
var detachedMustFail = []string{"net/http/half-closed-client-context-watcher-ends", "net/http/client-gone-ends-request-context"}

// TestWaitCasesCatchADetachedContext: net/http serving Handler with each
// request's context detached from the connection (it never ends when the
// client half-closes or goes) fails both wait cases, and still answers
// a half-closed client.
func TestWaitCasesCatchADetachedContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithoutCancel(r.Context())))
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	judge(t, l.Addr().String(), opts, detachedMustFail, []string{"net/http/half-closed-client-still-answered"})
}

// TestEveryCaseShownFailing: every case is among those shown failing
// against a server that breaks its rule (brokenServer, wrongServer or
// net/http with a detached context), so no case's checker is one that
// cannot fail.
func TestEveryCaseShownFailing(t *testing.T) {
	shown := map[string]bool{}
	for _, n := range append(append([]string{}, brokenMustFail...), detachedMustFail...) {
		shown[n] = true
	}
	for _, tc := range moreFaults {
		for _, n := range tc.mustFail {
			shown[n] = true
		}
	}
	for _, tc := range wrongTable {
		for _, n := range tc.mustFail {
			shown[n] = true
		}
	}
	for _, c := range Cases(opts) {
		if !shown[c.Name] {
			t.Errorf("case %s is shown failing against no broken server", c.Name)
		}
	}
}
