package h1fault

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wrongs are the rules wrongServer breaks, one flag each; with none set it
// keeps every rule of the cases wrongControl lists.
type wrongs struct {
	headBody       bool // writes the body of a reply to HEAD
	bodyOn204304   bool // writes the body of a 204 or 304 reply
	clOn204        bool // sends Content-Length: 0 with a 204
	flushUnchunked bool // sends a flushed HTTP/1.1 reply close-delimited, not chunked
	chunkTo10      bool // chunks a flushed reply to HTTP/1.0 too
	shortFilled    bool // reads on after a body shorter than its Content-Length
	longWhole      bool // writes what a handler wrote past its Content-Length
	panicComplete  bool // ends a panicked handler's reply as if it had returned
	drainAll       bool // drains an unread body of any size and reads on
	noDrain        bool // reads the next request from where the handler stopped reading
	no100          bool // never answers Expect: 100-continue with a 100
	eager100       bool // answers Expect: 100-continue with a 100 before the handler runs
	keepAliveLies  bool // says keep-alive to HTTP/1.0 and closes
	freshReader    bool // reads each request with a new buffer, losing pipelined bytes
	hostFor10      bool // refuses HTTP/1.0 without Host
	all431         bool // answers 431 for a request-target too long, not 414
	limitPlus      bool // takes a head one byte over MaxHeaderBytes
	limitMinus     bool // refuses a head of exactly MaxHeaderBytes
	emptyTarget    bool // takes the empty text between two SPs as the target "/"
	rejectAsterisk bool // refuses OPTIONS *
	bareLFReadOn   bool // refuses a head with a bare LF line end with 400 and reads on
	clNoOWS        bool // strips one SP before a Content-Length value and no other OWS
	dupCLReadOn    bool // refuses two Content-Length lines with 400 and reads on
	hex0x          bool // takes a chunk size with a 0x prefix
	hexWrap        bool // lets a chunk size of more than 16 hex digits wrap
	dataLineSkip   bool // skips the rest of the line after chunk data, CRLF or not
	extInSize      bool // parses a chunk size line's extension as part of the size
	noTrailers     bool // reads one line after the last chunk, a trailer field or not
	bareLFChunk    bool // ends a chunk size line at a bare LF
	extFlood       bool // reads chunk extensions of any length
}

// wrongServer is an HTTP/1.1 server written here from RFC 9112 and 9110
// (and, where the cases hold a server to net/http's choice, that choice)
// for the suite to catch when w breaks one rule: it serves the real
// Handler through its own ResponseWriter, so the reply-side cases (HEAD,
// 204 and 304, flushed and declared-length replies, panics, unread
// bodies) and the chunked decoder can each be broken alone.
func wrongServer(t *testing.T, w wrongs, o Options) string {
	return serveTestConns(t, func(c net.Conn) {
		ws := &wrongConn{c: c, br: bufio.NewReader(c), w: w, o: o}
		for ws.serve() {
		}
	})
}

type wrongConn struct {
	c  net.Conn
	br *bufio.Reader
	w  wrongs
	o  Options
	// bareLF is set when a line of the head being read ended in a bare LF.
	bareLF bool
}

var errTooLong = errors.New("line too long")

// line reads one line of at most limit bytes, ended by CRLF or a bare LF
// (RFC 9112 2.2), noting a bare LF in s.bareLF.
func (s *wrongConn) line(limit int) (string, error) {
	var b []byte
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return "", err
		}
		b = append(b, c)
		if len(b) > limit {
			return "", errTooLong
		}
		if c == '\n' {
			s.bareLF = s.bareLF || !bytes.HasSuffix(b, []byte("\r\n"))
			return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
		}
	}
}

// refuse answers code and closes: the framing that follows is not to be
// trusted. It half-closes and drains what the client already sent, so
// the client reads the reply rather than a reset.
func (s *wrongConn) refuse(code int) bool {
	fmt.Fprintf(s.c, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", code, http.StatusText(code))
	if tc, ok := s.c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	s.c.SetReadDeadline(time.Now().Add(never))
	io.Copy(io.Discard, s.br)
	return false
}

// serve serves one request and reports whether to read on.
func (s *wrongConn) serve() bool {
	if s.w.freshReader {
		s.br = bufio.NewReader(s.c)
	}
	max := s.o.MaxHeaderBytes
	switch {
	case s.w.limitPlus:
		max++
	case s.w.limitMinus:
		max--
	}
	s.bareLF = false
	rl, err := s.line(max)
	if errors.Is(err, errTooLong) {
		if s.w.all431 {
			return s.refuse(431)
		}
		return s.refuse(414)
	}
	if err != nil {
		return false
	}
	used := len(rl) + 2
	parts := strings.Split(rl, " ")
	if s.w.emptyTarget && len(parts) == 4 && parts[1] == "" {
		parts = []string{parts[0], "/", parts[3]}
	}
	if len(parts) != 3 || (parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0") {
		return s.refuse(400)
	}
	method, target, proto := parts[0], parts[1], parts[2]
	hdr := http.Header{}
	var cls []string
	for {
		l, err := s.line(max - used)
		if errors.Is(err, errTooLong) {
			return s.refuse(431)
		}
		if err != nil {
			return false
		}
		used += len(l) + 2
		if l == "" {
			break
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.IndexFunc(name, func(r rune) bool { return r > 0x7f || !isTchar(byte(r)) }) >= 0 || strings.ContainsAny(value, "\r\x00") {
			return s.refuse(400)
		}
		if equalFoldASCII(name, "Content-Length") {
			if s.w.clNoOWS {
				cls = append(cls, strings.TrimPrefix(value, " "))
			} else {
				cls = append(cls, strings.Trim(value, " \t"))
			}
			continue
		}
		hdr.Add(name, strings.Trim(value, " \t"))
	}
	if s.bareLF && s.w.bareLFReadOn {
		fmt.Fprint(s.c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		return true
	}
	if target == "*" && (method != "OPTIONS" || s.w.rejectAsterisk) {
		return s.refuse(400)
	}
	hosts := hdr.Values("Host")
	if len(hosts) > 1 || (proto == "HTTP/1.1" || s.w.hostFor10) && len(hosts) == 0 {
		return s.refuse(400)
	}
	u, err := url.ParseRequestURI(target)
	if target == "*" {
		u, err = &url.URL{Path: "*"}, nil
	}
	if err != nil {
		return s.refuse(400)
	}
	host := hdr.Get("Host")
	if u.Host != "" {
		host = u.Host
	}
	if strings.ContainsAny(host, " \t") {
		return s.refuse(400)
	}
	req := &http.Request{Method: method, URL: u, RequestURI: target, Proto: proto, ProtoMajor: 1, ProtoMinor: int(proto[7] - '0'),
		Header: hdr, Host: host, Body: http.NoBody, ContentLength: 0, RemoteAddr: s.c.RemoteAddr().String()}
	keep := proto == "HTTP/1.1" && !hasToken(hdr, "Connection", "close") ||
		proto == "HTTP/1.0" && hasToken(hdr, "Connection", "keep-alive")

	// Framing, RFC 9112 6.1 and 6.3.
	var body *wrongBody
	if te := hdr.Values("Transfer-Encoding"); len(te) > 0 {
		if len(te) != 1 || !equalFoldASCII(te[0], "chunked") {
			return s.refuse(501)
		}
		if len(cls) > 0 || proto == "HTTP/1.0" {
			return s.refuse(400)
		}
		body = &wrongBody{s: s, chunked: true}
		req.TransferEncoding = []string{"chunked"}
		req.ContentLength = -1
	} else if len(cls) > 0 {
		if len(cls) > 1 && s.w.dupCLReadOn {
			fmt.Fprint(s.c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return true
		}
		n := int64(-1)
		for _, v := range cls {
			for _, p := range strings.Split(v, ",") {
				if !s.w.clNoOWS {
					p = strings.Trim(p, " \t")
				}
				m, err := strconv.ParseInt(p, 10, 64)
				if err != nil || m < 0 || p[0] == '+' || (n >= 0 && m != n) {
					return s.refuse(400)
				}
				n = m
			}
		}
		body = &wrongBody{s: s, left: n}
		req.ContentLength = n
	}
	expect := equalFoldASCII(hdr.Get("Expect"), "100-continue") && proto == "HTTP/1.1" && body != nil
	if body != nil {
		body.expect = expect && !s.w.no100
		req.Body = body
	}
	if expect && s.w.eager100 {
		io.WriteString(s.c, "HTTP/1.1 100 Continue\r\n\r\n")
		body.expect = false
	}
	rw := &wrongWriter{s: s, hdr: http.Header{}, method: method, proto11: proto == "HTTP/1.1", keep: keep}
	if !s.run(rw, req) {
		return false
	}
	if rw.closeDelim || rw.short && !s.w.shortFilled || !rw.keep || body != nil && body.err != nil {
		return false
	}
	if body != nil && !body.done() && !s.w.noDrain {
		if body.expect && !body.sent100 {
			return false // the client waits for a 100 it will not get
		}
		if !s.w.drainAll {
			body.limit = 256 << 10
		}
		io.Copy(io.Discard, body)
		if !body.done() {
			return false
		}
	}
	return true
}

// run serves req through the real Handler; a panic drops the
// connection, with what the handler wrote unsent or incomplete.
func (s *wrongConn) run(rw *wrongWriter, req *http.Request) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
			if s.w.panicComplete {
				rw.finish()
			}
		}
	}()
	Handler().ServeHTTP(rw, req)
	rw.finish()
	return true
}

func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if equalFoldASCII(trimOWS(t), token) {
				return true
			}
		}
	}
	return false
}

// wrongBody is a request body, Content-Length framed or chunked (RFC
// 9112 7.1, with net/http's bounds: a size line under 4 KiB, extensions
// under 4 KiB in all).
type wrongBody struct {
	s               *wrongConn
	chunked         bool
	left            int64 // of the body (Content-Length) or the chunk
	last            bool  // chunked: the last chunk and trailers read
	extBytes        int
	crlf            bool
	expect, sent100 bool
	limit           int64 // when above 0, what a drain may read
	read            int64
	err             error
}

func (b *wrongBody) Close() error { return nil }

func (b *wrongBody) done() bool {
	if b.chunked {
		return b.last
	}
	return b.left == 0
}

func (b *wrongBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.expect && !b.sent100 {
		b.sent100 = true
		io.WriteString(b.s.c, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	if b.limit > 0 && b.read >= b.limit {
		return 0, io.EOF
	}
	if b.chunked {
		if b.last {
			return 0, io.EOF
		}
		if b.crlf {
			if err := b.chunkEnd(); err != nil {
				b.err = err
				return 0, err
			}
		}
		if b.left == 0 {
			if err := b.sizeLine(); err != nil {
				b.err = err
				return 0, err
			}
			if b.last {
				return 0, io.EOF
			}
		}
	} else if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.s.br.Read(p)
	b.left -= int64(n)
	b.read += int64(n)
	if b.chunked && b.left == 0 {
		b.crlf = true
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// chunkEnd reads the CRLF after a chunk's data.
func (b *wrongBody) chunkEnd() error {
	b.crlf = false
	if b.s.w.dataLineSkip {
		_, err := b.s.br.ReadString('\n')
		return err
	}
	var two [2]byte
	if _, err := io.ReadFull(b.s.br, two[:]); err != nil || two != [2]byte{'\r', '\n'} {
		return errors.New("chunk data not followed by CRLF")
	}
	return nil
}

// sizeLine reads chunk-size [ chunk-ext ] CRLF, and after the last chunk
// the trailer section.
func (b *wrongBody) sizeLine() error {
	limit := 4096
	if b.s.w.extFlood {
		limit = 1 << 30
	}
	l, err := b.s.br.ReadString('\n')
	if err != nil {
		return err
	}
	if len(l) >= limit {
		return errors.New("chunk size line too long")
	}
	if !strings.HasSuffix(l, "\r\n") && !b.s.w.bareLFChunk {
		return errors.New("chunk size line not ended by CRLF")
	}
	l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
	size := l
	if i := strings.IndexByte(l, ';'); i >= 0 && !b.s.w.extInSize {
		size = strings.TrimRight(l[:i], " \t")
		b.extBytes += len(l) - i
		if b.extBytes > 4096 && !b.s.w.extFlood {
			return errors.New("too many chunk extension bytes")
		}
	}
	var n uint64
	switch {
	case b.s.w.hex0x:
		n, err = strconv.ParseUint(size, 0, 64)
	case b.s.w.hexWrap:
		for i := 0; i < len(size); i++ {
			d, e := strconv.ParseUint(size[i:i+1], 16, 8)
			if e != nil {
				return e
			}
			n = n<<4 | d
		}
		if int64(n) < 0 {
			n = 0 // the wrapped size read as a signed one, a negative one as the last chunk
		}
	default:
		if size == "" || len(size) > 16 {
			return errors.New("invalid chunk size")
		}
		n, err = strconv.ParseUint(size, 16, 64)
	}
	if err != nil {
		return err
	}
	if n > 0 {
		b.left = int64(n)
		return nil
	}
	b.last = true
	for {
		t, err := b.s.br.ReadString('\n')
		if err != nil {
			return err
		}
		if t == "\r\n" || b.s.w.noTrailers {
			return nil
		}
	}
}

// wrongWriter is the ResponseWriter: it holds what the handler writes
// until it returns or flushes, then frames it by RFC 9112 6.3 and 7.1.
type wrongWriter struct {
	s          *wrongConn
	hdr        http.Header
	status     int
	buf        bytes.Buffer
	sent       bool
	method     string
	proto11    bool
	keep       bool
	declared   int64
	written    int64
	chunking   bool
	closeDelim bool
	short      bool
}

func (w *wrongWriter) Header() http.Header { return w.hdr }

func (w *wrongWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *wrongWriter) Write(p []byte) (int, error) {
	w.WriteHeader(200)
	if w.sent {
		w.body(p)
		return len(p), nil
	}
	return w.buf.Write(p)
}

func (w *wrongWriter) Flush() {
	w.WriteHeader(200)
	if !w.sent {
		w.head(true)
	}
}

func (w *wrongWriter) bodiless() bool {
	return w.method == "HEAD" || w.status == 204 || w.status == 304
}

// head sends the status line and fields, then what is held.
func (w *wrongWriter) head(streaming bool) {
	w.sent = true
	w.declared = -1
	if v := w.hdr.Get("Content-Length"); v != "" {
		w.declared, _ = strconv.ParseInt(v, 10, 64)
	} else if !streaming && w.status != 204 {
		w.declared = int64(w.buf.Len())
	}
	if streaming && w.declared < 0 && !w.bodiless() {
		if (w.proto11 || w.s.w.chunkTo10) && !w.s.w.flushUnchunked {
			w.chunking = true
		} else {
			w.closeDelim = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", w.status, http.StatusText(w.status))
	w.hdr.Del("Content-Length")
	keys := make([]string, 0, len(w.hdr))
	for k := range w.hdr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range w.hdr[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if w.declared >= 0 && (w.status != 204 || w.s.w.clOn204) {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", w.declared)
	}
	if w.status == 204 && w.s.w.clOn204 && w.declared < 0 {
		b.WriteString("Content-Length: 0\r\n")
	}
	if w.chunking {
		b.WriteString("Transfer-Encoding: chunked\r\n")
	}
	switch {
	case w.closeDelim || !w.keep:
		w.keep = false
		b.WriteString("Connection: close\r\n")
	case !w.proto11:
		b.WriteString("Connection: keep-alive\r\n")
		if w.s.w.keepAliveLies {
			w.keep = false
		}
	}
	b.WriteString("\r\n")
	io.WriteString(w.s.c, b.String())
	held := w.buf.Bytes()
	w.buf = bytes.Buffer{}
	w.body(held)
}

// body sends p as the framing chosen allows.
func (w *wrongWriter) body(p []byte) {
	if len(p) == 0 {
		return
	}
	if w.bodiless() && !(w.method == "HEAD" && w.s.w.headBody) && !(w.method != "HEAD" && w.s.w.bodyOn204304) {
		return
	}
	if w.declared >= 0 && !w.s.w.longWhole {
		p = p[:min(int64(len(p)), max(w.declared-w.written, 0))]
	}
	w.written += int64(len(p))
	if w.chunking {
		fmt.Fprintf(w.s.c, "%x\r\n%s\r\n", len(p), p)
		return
	}
	w.s.c.Write(p)
}

// finish ends the reply after the handler returned.
func (w *wrongWriter) finish() {
	w.WriteHeader(200)
	if !w.sent {
		w.head(false)
	}
	if w.chunking {
		io.WriteString(w.s.c, "0\r\n\r\n")
	}
	if w.declared >= 0 && w.written < w.declared && !w.bodiless() {
		w.short = true
	}
}

// wrongNoContext are the cases wrongServer cannot keep: it gives the
// handler no request context that ends with the connection.
var wrongNoContext = []string{"net/http/half-closed-client-context-watcher-ends", "net/http/client-gone-ends-request-context"}

// wrongControl are the cases wrongServer with no rule broken must pass:
// every case but those waiting on timeouts it does not have and those
// on a request context it does not give.
func wrongControl() []string {
	var names []string
	for _, c := range Cases(opts) {
		if !c.Timeouts && !slices.Contains(wrongNoContext, c.Name) {
			names = append(names, c.Name)
		}
	}
	return names
}

// wrongTable: for each rule wrongServer can break, the cases that must
// fail with it broken (each passes in wrongControl, so the failure is the
// broken rule's) and one it leaves alone, which must still pass.
var wrongTable = []struct {
	name     string
	w        wrongs
	mustFail []string
	mustPass []string
}{
	{"head-body", wrongs{headBody: true}, []string{"rfc9110-9.3.2/head-reply-has-no-body"}, []string{"rfc9110-6.4.1/204-reply-has-no-body"}},
	{"body-on-204-304", wrongs{bodyOn204304: true}, []string{"rfc9110-6.4.1/204-reply-has-no-body", "rfc9110-6.4.1/304-reply-has-no-body"},
		[]string{"rfc9110-9.3.2/head-reply-has-no-body"}},
	{"content-length-on-204", wrongs{clOn204: true}, []string{"rfc9110-6.4.1/204-reply-has-no-body"}, []string{"rfc9110-6.4.1/304-reply-has-no-body"}},
	{"flush-unchunked", wrongs{flushUnchunked: true}, []string{"rfc9112-7.1/flushed-reply-is-chunked"}, []string{"rfc9112-6.1/no-chunked-reply-to-http10"}},
	{"chunk-to-http10", wrongs{chunkTo10: true}, []string{"rfc9112-6.1/no-chunked-reply-to-http10"}, []string{"rfc9112-7.1/flushed-reply-is-chunked"}},
	{"short-filled", wrongs{shortFilled: true}, []string{"rfc9112-6.3/item-6-content-length-short-by-handler-closes"},
		[]string{"rfc9112-6.3/item-6-content-length-long-by-handler-truncated"}},
	{"long-whole", wrongs{longWhole: true}, []string{"rfc9112-6.3/item-6-content-length-long-by-handler-truncated"},
		[]string{"rfc9112-6.3/item-6-content-length-short-by-handler-closes"}},
	{"panic-completes-reply", wrongs{panicComplete: true}, []string{"net/http/panic-before-write-no-reply",
		"net/http/panic-after-write-no-complete-reply", "rfc9112-7.1/panic-after-flush-chunked-left-unterminated"},
		[]string{"rfc9112-7.1/flushed-reply-is-chunked"}},
	{"drain-all", wrongs{drainAll: true}, []string{"net/http/unread-body-over-256kib-closes"},
		[]string{"net/http/unread-small-body-drained-connection-reused"}},
	{"no-drain", wrongs{noDrain: true}, []string{"net/http/unread-small-body-drained-connection-reused"},
		[]string{"rfc9112-9.3.2/three-pipelined-in-one-write"}},
	{"no-100", wrongs{no100: true}, []string{"rfc9110-10.1.1/100-continue-before-final-reply"},
		[]string{"rfc9110-15.2/no-100-continue-to-http10"}},
	{"eager-100", wrongs{eager100: true}, []string{"rfc9110-10.1.1/expect-unread-body-final-reply-then-close-or-drain"},
		[]string{"rfc9110-10.1.1/100-continue-before-final-reply"}},
	{"keep-alive-lies", wrongs{keepAliveLies: true}, []string{"rfc9112-9.3/http10-keep-alive-persists-or-closes"},
		[]string{"rfc9112-9.3/http10-closes-without-keep-alive"}},
	{"fresh-reader", wrongs{freshReader: true}, []string{"rfc9112-9.3.2/three-pipelined-in-one-write", "rfc9112-9.3.2/pipelined-after-chunked-body"},
		[]string{"rfc9112-3.2/http10-without-host-accepted"}},
	{"host-for-http10", wrongs{hostFor10: true}, []string{"rfc9112-3.2/http10-without-host-accepted"}, []string{"rfc9112-3.2/http11-without-host"}},
	{"all-431", wrongs{all431: true}, []string{"rfc9112-3/request-target-too-long-414"}, []string{"rfc6585-5/head-one-over-max-header-bytes-431"}},
	{"limit-plus-one", wrongs{limitPlus: true}, []string{"rfc6585-5/head-one-over-max-header-bytes-431"},
		[]string{"net/http/head-at-max-header-bytes-accepted", "rfc6585-5/head-far-over-max-header-bytes-431"}},
	{"limit-minus-one", wrongs{limitMinus: true}, []string{"net/http/head-at-max-header-bytes-accepted"},
		[]string{"rfc6585-5/head-one-over-max-header-bytes-431"}},
	{"empty-target", wrongs{emptyTarget: true}, []string{"rfc9112-3/request-line-two-spaces"}, []string{"rfc9112-3.2.2/absolute-form-accepted"}},
	{"reject-asterisk", wrongs{rejectAsterisk: true}, []string{"rfc9112-3.2.4/asterisk-form-options"}, []string{"rfc9112-3.2.4/asterisk-form-with-get"}},
	{"bare-lf-400-reads-on", wrongs{bareLFReadOn: true}, []string{"rfc9112-2.2/bare-lf-line-endings"}, []string{"rfc9112-3.2/two-host-fields"}},
	{"content-length-no-ows", wrongs{clNoOWS: true}, []string{"rfc9112-5.1/content-length-with-ows-is-5"},
		[]string{"rfc9110-8.6/content-length-same-value-twice"}},
	{"duplicate-content-length-reads-on", wrongs{dupCLReadOn: true}, []string{"rfc9110-8.6/content-length-same-value-twice"},
		[]string{"rfc9110-8.6/content-length-same-value-listed"}},
	{"hex-0x", wrongs{hex0x: true}, []string{"rfc9112-7.1/chunk-size-0x-prefix"}, []string{"rfc9112-7.1/chunk-size-hex-junk"}},
	{"hex-wrap", wrongs{hexWrap: true}, []string{"rfc9112-7.1/chunk-size-overflow"}, []string{"rfc9112-7.1/chunk-size-0x-prefix"}},
	{"data-line-skip", wrongs{dataLineSkip: true}, []string{"rfc9112-7.1/chunk-data-without-crlf"}, []string{"rfc9112-7.1/chunk-size-overflow"}},
	{"extension-in-size", wrongs{extInSize: true}, []string{"rfc9112-7.1.1/chunk-extension-ignored"}, []string{"rfc9112-7.1.2/chunked-trailer-section"}},
	{"no-trailers", wrongs{noTrailers: true}, []string{"rfc9112-7.1.2/chunked-trailer-section"}, []string{"rfc9112-7.1.1/chunk-extension-ignored"}},
	{"bare-lf-chunk-line", wrongs{bareLFChunk: true}, []string{"rfc9112-7.1/chunk-size-line-ended-by-bare-lf"},
		[]string{"rfc9112-2.2/bare-lf-line-endings"}},
	{"extension-flood", wrongs{extFlood: true}, []string{"rfc9112-7.1.1/chunk-extension-flood-refused"},
		[]string{"rfc9112-7.1.1/chunk-extension-ignored"}},
}

// TestWrongServerControl: wrongServer with no rule broken passes every
// case of wrongControl, so each failure in TestCasesCatchWrongServer is
// the broken rule's.
func TestWrongServerControl(t *testing.T) {
	judge(t, wrongServer(t, wrongs{}, opts), opts, nil, wrongControl())
}

// TestCasesCatchWrongServer: each rule broken alone fails the cases that
// check it, and leaves a case it does not touch passing.
func TestCasesCatchWrongServer(t *testing.T) {
	for _, tc := range wrongTable {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			judge(t, wrongServer(t, tc.w, opts), opts, tc.mustFail, tc.mustPass)
		})
	}
}
