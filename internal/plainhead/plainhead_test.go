package plainhead

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func anyLine([]byte) bool { return true }

func TestScan(t *testing.T) {
	for _, c := range []struct {
		head    string
		n, want int
	}{
		{"X\r\nA: b\r\n\r\nbody", 11, Plain},
		{"X\r\n\r\n", 5, Plain},
		{"X\r\nA: b\r\n", 0, Partial},
		{"X\r\nA: b", 0, Partial},
		{"X\nA: b\r\n\r\n", 0, NotPlain},         // bare LF
		{"X\r\nA: b\rc\r\n\r\n", 0, NotPlain},    // bare CR
		{"X\r\nA : b\r\n\r\n", 0, NotPlain},      // space before the colon
		{"X\r\nA: b\r\n c\r\n\r\n", 0, NotPlain}, // obs-fold
		{"X\r\nA: \x00\r\n\r\n", 0, NotPlain},
		{"X\r\nA: \x7f\r\n\r\n", 0, NotPlain},
		{"X\r\nA: \tb\xff\r\n\r\n", 13, Plain}, // tab and obs-text are taken
		{"X\r\n: b\r\n\r\n", 0, NotPlain},
		{"X\r\nAb\r\n\r\n", 0, NotPlain},
	} {
		n, v := Scan([]byte(c.head), anyLine)
		if n != c.n || v != c.want {
			t.Errorf("Scan(%q) = %d, %d; want %d, %d", c.head, n, v, c.n, c.want)
		}
	}
	// The first line is the caller's to judge, and judged before the
	// head is whole.
	if _, v := Scan([]byte("BAD\r\nA: b\r\n"), func(l []byte) bool { return string(l) != "BAD" }); v != NotPlain {
		t.Errorf("a first line its judge refuses: %d, want NotPlain", v)
	}
}

// TestScanFromJudgesEachLineOnce: a head given a byte at a time, each call
// resuming where the last left off, has its first line judged once and
// ends as Scan ends on the whole of it.
func TestScanFromJudgesEachLineOnce(t *testing.T) {
	head := []byte("X\r\nA: b\r\nC: d\r\n\r\nbody")
	judged := 0
	first := func([]byte) bool { judged++; return true }
	next, n, v := 0, 0, Partial
	for i := 0; i <= len(head) && v == Partial; i++ {
		n, v, next = ScanFrom(head[:i], next, first)
	}
	if wn, wv := Scan(head, anyLine); n != wn || v != wv {
		t.Errorf("resumed: %d, %d; Scan: %d, %d", n, v, wn, wv)
	}
	if judged != 1 {
		t.Errorf("first line judged %d times, want once", judged)
	}
}

// TestCanonicalKey holds canonicalKey to net/http's CanonicalHeaderKey
// over spellings a client may send: canonical, lower case (Node's fetch),
// upper case, mixed, with digits and dashes in odd places, and a name
// longer than the room canonicalKey keeps on the stack.
func TestCanonicalKey(t *testing.T) {
	keys := []string{"", "a", "A", "-", "--a", "a-", "1a-b", "x-1b", "ACCEPT", "mcp-protocol-version",
		"MCP-Protocol-Version", "Mcp-Protocol-Version", "mcp-session-id", "x-custom-thing", "X-CUSTOM-thing",
		"content-type", "cOnTeNt-TyPe", "te", "x-forwarded-for", "a_b", "a.b-c", "a~b!c#d$e%f&g'h*i+j^k`l|m",
		strings.Repeat("ab-", 17), strings.Repeat("X", 48), strings.Repeat("x", 49)}
	for n := range knownKeys {
		keys = append(keys, n, strings.ToLower(n), strings.ToUpper(n))
	}
	for _, k := range keys {
		if got, want := canonicalKey(k), http.CanonicalHeaderKey(k); got != want {
			t.Errorf("canonicalKey(%q) = %q, net/http %q", k, got, want)
		}
	}
}

// TestLowerCaseFieldsAllocs: a head whose names are all lower case, as
// Node's fetch sends them, costs no more allocations than one with the
// same names canonical, for the names MCP traffic carries.
func TestLowerCaseFieldsAllocs(t *testing.T) {
	canonical := "Host: x\r\nContent-Type: a\r\nAccept: b\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n" +
		"Mcp-Name: echo\r\nMcp-Session-Id: s\r\nLast-Event-Id: 3\r\nAuthorization: Bearer t\r\nTraceparent: 00\r\n\r\n"
	var lower string
	for _, l := range strings.SplitAfter(canonical, "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok {
			l = strings.ToLower(k) + ":" + v
		}
		lower += l
	}
	values := make([]string, 16)
	h := make(http.Header, 16)
	count := func(fields string) float64 {
		return testing.AllocsPerRun(100, func() {
			clear(h)
			FieldsInto(h, fields, values)
		})
	}
	if got, want := count(lower), count(canonical); got > want {
		t.Errorf("lower-case names: %v allocations, canonical ones %v", got, want)
	}
	if got := Fields(lower, nil); !reflect.DeepEqual(got, Fields(canonical, nil)) {
		t.Errorf("lower-case names make %v", got)
	}
}

// TestKnownKeysCoverNetHTTPs: no field name costs canonicalKey an
// allocation where it costs net/http's CanonicalHeaderKey none, in any
// spelling. The names tried are the HTTP field names of IANA's registry
// that clients and servers commonly send, and MCP's; net/http itself says
// which of them it shares.
func TestKnownKeysCoverNetHTTPs(t *testing.T) {
	names := []string{"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language", "Accept-Ranges",
		"Access-Control-Allow-Origin", "Age", "Allow", "Authorization", "Cache-Control", "Cc", "Connection",
		"Content-Disposition", "Content-Encoding", "Content-Id", "Content-Language", "Content-Length",
		"Content-Location", "Content-Range", "Content-Transfer-Encoding", "Content-Type", "Cookie", "Date",
		"Dkim-Signature", "Etag", "Expect", "Expires", "Forwarded", "From", "Host", "If-Match",
		"If-Modified-Since", "If-None-Match", "If-Range", "If-Unmodified-Since", "In-Reply-To", "Keep-Alive",
		"Last-Event-Id", "Last-Modified", "Link", "Location", "Max-Forwards", "Mcp-Method", "Mcp-Name",
		"Mcp-Protocol-Version", "Mcp-Session-Id", "Message-Id", "Mime-Version", "Origin", "Pragma",
		"Proxy-Authenticate", "Proxy-Authorization", "Range", "Received", "Referer", "Retry-After",
		"Return-Path", "Server", "Set-Cookie", "Subject", "Te", "To", "Traceparent", "Tracestate",
		"Trailer", "Transfer-Encoding", "Upgrade", "User-Agent", "Vary", "Via", "Www-Authenticate",
		"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Imforwards", "X-Powered-By",
		"X-Request-Id"}
	for _, n := range names {
		for _, k := range []string{strings.ToLower(n), strings.ToUpper(n)} {
			theirs := testing.AllocsPerRun(10, func() { _ = http.CanonicalHeaderKey(k) })
			ours := testing.AllocsPerRun(10, func() { _ = canonicalKey(k) })
			if ours > theirs {
				t.Errorf("%q: %v allocations, net/http's CanonicalHeaderKey %v", k, ours, theirs)
			}
		}
	}
}

func TestLength(t *testing.T) {
	for _, c := range []struct {
		s  string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"999999999999999999", 999999999999999999, true},
		{"", 0, false}, {"1000000000000000000", 0, false}, {"+1", 0, false}, {"-1", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"0x1", 0, false}, {"1,1", 0, false},
	} {
		if n, ok := Length(c.s); n != c.n || ok != c.ok {
			t.Errorf("Length(%q) = %d, %v; want %d, %v", c.s, n, ok, c.n, c.ok)
		}
	}
}

// FuzzScan: a head Scan calls plain splits, by net/textproto (net/http's
// reader of header blocks), into the same fields with the same values,
// and Length agrees with strconv where it takes a value.
func FuzzScan(f *testing.F) {
	f.Add([]byte("X\r\nA: b\r\nC-D:e \r\n\r\n"), "12")
	f.Add([]byte("X\r\nA: b\r\n c\r\n\r\n"), "+1")
	f.Add([]byte("X\r\nmcp-protocol-version: 2026-07-28\r\nx-custom-Thing:\t1 \r\nACCEPT: a\r\naccept: b\r\n\r\n"), "7")
	f.Add([]byte("X\r\nA: b\t\r\nC:\t \t\r\n\r\n"), "3")                   // tabs and spaces trimmed from either end
	f.Add([]byte("X\r\nhost: a\r\nA: b\r\nHOST: c\r\nHost:\r\n\r\n"), "1") // three Hosts, one empty
	f.Fuzz(func(t *testing.T, head []byte, length string) {
		if n, ok := Length(length); ok {
			if m, err := strconv.ParseInt(length, 10, 64); err != nil || m != n {
				t.Errorf("Length(%q) = %d, strconv %d, %v", length, n, m, err)
			}
		}
		n, v := Scan(head, anyLine)
		// Resumed over every prefix, as a reader that gets the head a
		// byte at a time calls it, ScanFrom ends where Scan does.
		next, rn, rv := 0, 0, Partial
		for i := 0; i <= len(head) && rv == Partial; i++ {
			rn, rv, next = ScanFrom(head[:i], next, anyLine)
		}
		if rn != n || rv != v {
			t.Errorf("%q: ScanFrom over its prefixes = %d, %d; Scan %d, %d", head, rn, rv, n, v)
		}
		if v != Plain {
			return
		}
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head[:n])))
		if _, err := tp.ReadLine(); err != nil {
			t.Fatalf("%q: first line: %v", head[:n], err)
		}
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("%q: plain, but net/textproto refuses it: %v", head[:n], err)
		}
		first := bytes.IndexByte(head, '\n') + 1
		for _, room := range [][]string{nil, make([]string, 2)} {
			if got := Fields(string(head[first:n]), room); !reflect.DeepEqual(got, http.Header(h)) {
				t.Errorf("%q: Fields = %v, net/textproto %v", head[:n], got, h)
			}
			// Into a map kept from another head and cleared: nothing of
			// that head is left.
			kept := http.Header{"Kept": {"x"}, "X-Only-Before": {"y", "z"}}
			for k, vv := range h {
				kept[k] = append([]string{"before"}, vv...)
			}
			clear(kept)
			if got := FieldsInto(kept, string(head[first:n]), room); !reflect.DeepEqual(got, http.Header(h)) {
				t.Errorf("%q: FieldsInto a kept map = %v, net/textproto %v", head[:n], got, h)
			}
		}
		// A request's: the same header but its Host fields, whose
		// values, in order, come apart.
		for _, room := range [][]string{nil, make([]string, 1), make([]string, 16)} {
			got, hosts := RequestFields(string(head[first:n]), room)
			want := http.Header(h).Clone()
			delete(want, "Host")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q: RequestFields = %v, net/textproto without Host %v", head[:n], got, want)
			}
			if !slices.Equal(hosts, h["Host"]) {
				t.Errorf("%q: RequestFields hosts = %q, net/textproto %q", head[:n], hosts, h["Host"])
			}
		}
		lines := strings.Split(string(head[:n]), "\r\n")
		fields := lines[1 : len(lines)-2]
		count := 0
		for _, vv := range h {
			count += len(vv)
		}
		if count != len(fields) {
			t.Errorf("%q: %d field lines, net/textproto read %d values", head[:n], len(fields), count)
		}
		for _, l := range fields {
			k, val, _ := strings.Cut(l, ":")
			want := strings.Trim(val, " \t")
			if !contains(h.Values(k), want) {
				t.Errorf("%q: field %q: net/textproto has %q, want %q among them", head[:n], k, h.Values(k), want)
			}
		}
	})
}

func contains(vv []string, s string) bool {
	for _, v := range vv {
		if v == s {
			return true
		}
	}
	return false
}

// TestManyEmptyFieldsMakeASmallMap: a head of a mebibyte of empty fields
// of one name makes a map of one entry, not one sized by its line count
// (which took 45 MB for such a head); the values it holds cost what they
// must.
func TestManyEmptyFieldsMakeASmallMap(t *testing.T) {
	fields := strings.Repeat("a:\r\n", 1<<18) + "\r\n"
	for name, build := range map[string]func(){
		"Fields":        func() { Fields(fields, nil) },
		"RequestFields": func() { RequestFields(fields, nil) },
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		build()
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 32*uint64(len(fields)) {
			t.Errorf("%s of %d bytes allocated %d bytes", name, len(fields), got)
		}
	}
}

// TestEqualFold: ASCII letters fold, nothing else does, as net/http
// compares tokens (RFC 9110 5.6.2: a token is ASCII).
func TestEqualFold(t *testing.T) {
	for _, c := range []struct {
		s, t string
		want bool
	}{
		{"chunked", "chunked", true},
		{"Chunked", "chunked", true},
		{"CHUNKED", "chunked", true},
		{"", "", true},
		{"chunked", "chunke", false},
		{"chun\u212aed", "chunked", false}, // Kelvin sign, which Unicode folds to k
		{"clo\u017fe", "close", false},     // long s, which Unicode folds to s
		{"LOCALHO\u017fT", "localhost", false},
		{"[", "{", false}, // 0x5B and 0x7B differ by the case bit but are no letters
		{"@", "`", false},
		{"\xc3\xa9", "\xc3\x89", false}, // é and É: no fold beyond ASCII
	} {
		if got := EqualFold(c.s, c.t); got != c.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", c.s, c.t, got, c.want)
		}
		if got := EqualFold(c.t, c.s); got != c.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", c.t, c.s, got, c.want)
		}
	}
}
