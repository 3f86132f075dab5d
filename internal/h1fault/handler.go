package h1fault

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Handler returns the handler a server under test serves for Cases. Its
// paths:
//
//   - /echo (and any path not below): reads the whole body and answers 200
//     with lines "key=value": method, target (the request-target as
//     received), path, host, proto, x-probe (the X-Probe values, quoted),
//     te and cl (the Transfer-Encoding and Content-Length the handler
//     saw), body-len and body-sha256. A body that fails to read gets 400
//     with a body-error line.
//   - /stream: writes part1, part2, part3, flushing after each.
//   - /wait?id=ID&max=DUR: waits until the request's context ends or DUR
//     passes, records which in this process (see the wait cases), and
//     answers "ended=context" or "ended=timer".
//   - /nobody: answers 200 "early" without reading the body.
//   - /panic: panics; with ?write=1 after writing "partial", with
//     ?flush=1 after writing and flushing it.
//   - /short: declares Content-Length 10 and writes 5 bytes.
//   - /long: declares Content-Length 5 and writes 10 bytes in two writes
//     of 5.
//   - /status?code=N: answers status N, trying to write a body "body".
//
// The /wait records live in this package, so the wait cases judge a
// server that serves this Handler in the same process.
func Handler() http.Handler { return http.HandlerFunc(serve) }

func serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch r.URL.Path {
	case "/stream":
		f, _ := w.(http.Flusher)
		for _, p := range streamParts {
			io.WriteString(w, p)
			if f != nil {
				f.Flush()
			}
		}
	case "/wait":
		wait(w, r, q.Get("id"), q.Get("max"))
	case "/nobody":
		io.WriteString(w, "early")
	case "/panic":
		if q.Get("write") == "1" || q.Get("flush") == "1" {
			io.WriteString(w, "partial")
		}
		if q.Get("flush") == "1" {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		panic("h1fault: the panic the /panic path exists for")
	case "/short":
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "short")
	case "/long":
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "long-")
		io.WriteString(w, "extra")
	case "/status":
		code, _ := strconv.Atoi(q.Get("code"))
		w.WriteHeader(code)
		io.WriteString(w, "body")
	default:
		echo(w, r)
	}
}

// streamParts are what /stream writes, one flush each.
var streamParts = []string{"part1", "part2", "part3"}

func echo(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	var b strings.Builder
	fmt.Fprintf(&b, "method=%s\ntarget=%s\npath=%s\nhost=%s\nproto=%s\n", r.Method, r.RequestURI, r.URL.Path, r.Host, r.Proto)
	fmt.Fprintf(&b, "x-probe=%s\nte=%s\ncl=%d\n", strconv.Quote(strings.Join(r.Header.Values("X-Probe"), ",")), strings.Join(r.TransferEncoding, ","), r.ContentLength)
	fmt.Fprintf(&b, "body-len=%d\nbody-sha256=%s\n", n, hex.EncodeToString(h.Sum(nil)))
	if err != nil {
		fmt.Fprintf(&b, "body-error=%s\n", strconv.Quote(err.Error()))
		w.WriteHeader(http.StatusBadRequest)
	}
	io.WriteString(w, b.String())
}

// waitRecord is what /wait records of one request.
type waitRecord struct {
	started chan struct{}
	ended   chan struct{}
	how     string // "context" or "timer", set before ended closes
}

var (
	waitsMu sync.Mutex
	waits   = map[string]*waitRecord{}
)

// record returns the record of id, made on first use by either side.
func record(id string) *waitRecord {
	waitsMu.Lock()
	defer waitsMu.Unlock()
	rec := waits[id]
	if rec == nil {
		rec = &waitRecord{started: make(chan struct{}), ended: make(chan struct{})}
		waits[id] = rec
	}
	return rec
}

// forget drops id's record once its case is done with it.
func forget(id string) {
	waitsMu.Lock()
	delete(waits, id)
	waitsMu.Unlock()
}

func wait(w http.ResponseWriter, r *http.Request, id, max string) {
	d, err := time.ParseDuration(max)
	if id == "" || err != nil {
		http.Error(w, "wait needs id and max", http.StatusBadRequest)
		return
	}
	rec := record(id)
	select {
	case <-rec.started:
		http.Error(w, "wait id used twice", http.StatusBadRequest)
		return
	default:
	}
	close(rec.started)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		rec.how = "context"
	case <-t.C:
		rec.how = "timer"
	}
	close(rec.ended)
	io.WriteString(w, "ended="+rec.how)
}
