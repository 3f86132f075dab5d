package h1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// One client connection doing keep-alive POSTs of a tools/call's size
// against a handler that reads the body and writes a JSON reply, served by
// this server and by net/http's. CPU/op is the process's user and system
// time (client included, the same for both) per request.

var benchBody = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_files","arguments":{"pattern":"*.go","path":"/srv/repo","limit":50}}}`)

var benchReply = []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"found 12 files: a.go b.go c.go d.go e.go f.go g.go h.go i.go j.go k.go l.go"}]}}`)

func benchHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf [512]byte
		for {
			if _, err := r.Body.Read(buf[:]); err != nil {
				break
			}
		}
		w.Header()["Content-Type"] = []string{"application/json"}
		w.Write(benchReply)
	})
}

func benchServe(b *testing.B, own bool) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if own {
		s := &Server{Handler: benchHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
		go s.Serve(l)
		defer s.Close()
	} else {
		s := &http.Server{Handler: benchHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
		go s.Serve(l)
		defer s.Close()
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("POST /mcp HTTP/1.1\r\nHost: sidecar:8080\r\nUser-Agent: bench\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: 4b1f3c2a9d8e7f60\r\nContent-Length: " + strconv.Itoa(len(benchBody)) + "\r\n\r\n")
	req = append(req, benchBody...)
	br := bufio.NewReader(c)
	one := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		n := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(line) == 2 {
				break
			}
			if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
				n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if n != len(benchReply) {
			b.Fatalf("reply length %d", n)
		}
		br.Discard(n)
	}
	one()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		one()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	io.Discard.Write(nil)
}

func BenchmarkKeepAlivePOST(b *testing.B) {
	b.Run("h1", func(b *testing.B) { benchServe(b, true) })
	b.Run("net-http", func(b *testing.B) { benchServe(b, false) })
}

// A stream of 50 small events, each flushed, per request: the cost per
// event of Write and Flush.
func benchStream(b *testing.B, own bool) {
	event := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for range 50 {
			w.Write(event)
			f.Flush()
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if own {
		s := &Server{Handler: h}
		go s.Serve(l)
		defer s.Close()
	} else {
		s := &http.Server{Handler: h}
		go s.Serve(l)
		defer s.Close()
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := []byte("GET /mcp HTTP/1.1\r\nHost: sidecar\r\nAccept: text/event-stream\r\n\r\n")
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ReportAllocs()
	for b.Loop() {
		c.Write(req)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*50), "cpu-ns/event")
}

func BenchmarkStream(b *testing.B) {
	b.Run("h1", func(b *testing.B) { benchStream(b, true) })
	b.Run("net-http", func(b *testing.B) { benchStream(b, false) })
}
