package h1fault

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// brokenServer is a deliberately faulty HTTP/1.1 server for the suite to
// catch: it frames a body by Content-Length even beside Transfer-Encoding
// (and ignores Transfer-Encoding otherwise), takes a Content-Length it
// cannot parse as 0, checks no Host, has no bound
// on a head and no timeout, and keeps every connection open. It answers
// every request as /echo does.
func brokenServer(t *testing.T) string {
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
				brokenConn(c)
			}()
		}
	}()
	return l.Addr().String()
}

func brokenConn(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		parts := strings.Fields(line)
		if len(parts) != 3 {
			return
		}
		hdr := map[string]string{}
		for {
			l, err := br.ReadString('\n')
			if err != nil {
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
		n, err := strconv.Atoi(hdr["content-length"])
		if err != nil || n < 0 {
			n = 0 // Atoi's out-of-range answer is its largest int
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		u, _ := url.ParseRequestURI(parts[1])
		path := parts[1]
		if u != nil {
			path = u.Path
		}
		sum := sha256.Sum256(body)
		out := fmt.Sprintf("method=%s\ntarget=%s\npath=%s\nhost=%s\nproto=%s\nx-probe=%q\nbody-len=%d\nbody-sha256=%s\n",
			parts[0], parts[1], path, hdr["host"], parts[2], hdr["x-probe"], len(body), hex.EncodeToString(sum[:]))
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(out), out); err != nil {
			return
		}
	}
}

// TestCasesCatchABrokenServer: the cases for each of brokenServer's
// faults fail against it, and a case it does not break passes (so the
// failures come from the faults, not from a server too broken to answer).
func TestCasesCatchABrokenServer(t *testing.T) {
	addr := brokenServer(t)
	mustFail := []string{
		"rfc9112-6.3/item-3-content-length-and-chunked",
		"rfc9112-6.3/item-4-transfer-encoding-without-chunked",
		"rfc9112-7/transfer-coding-name-case-insensitive",
		"rfc9110-8.6/content-length-overflowing-integers",
		"rfc9112-7.1/chunk-size-hex-junk",
		"rfc9112-3.2/http11-without-host",
		"rfc9112-3.2/two-host-fields",
		"rfc6585-5/head-far-over-max-header-bytes-431",
		"rfc9112-9.5/head-dripped-past-read-header-timeout-cut-off",
		"rfc9112-9.5/idle-keep-alive-closed-after-idle-timeout",
		"rfc9112-9.5/silent-new-connection-closed",
		"rfc9112-9.6/connection-close-closes-after-reply",
		"rfc9112-9.3/http10-closes-without-keep-alive",
	}
	mustPass := []string{"rfc9112-9.3.2/three-pipelined-in-one-write", "rfc9112-5.1/content-length-with-ows-is-5"}
	byName := map[string]Case{}
	for _, c := range Cases(opts) {
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
