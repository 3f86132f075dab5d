package h1fault

import (
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Options are the limits the server under test was started with.
type Options struct {
	MaxHeaderBytes    int
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
}

// Case is one fault: Run dials addr, writes the fault and returns why the
// server's answer breaks the rule the Name cites, or nil. Timeouts marks
// the cases that wait for the server's ReadHeaderTimeout or IdleTimeout:
// run them against a server started with short ones, and the rest against
// one with long ones, so a stall of a loaded machine cuts off no other
// case.
type Case struct {
	Name     string
	Run      func(addr string) error
	Timeouts bool
}

const (
	post = "POST /echo HTTP/1.1\r\nHost: " + host + "\r\n"
	get  = "GET /echo HTTP/1.1\r\nHost: " + host + "\r\n"
)

// bodyLen accepts an /echo reply that read n body bytes.
func bodyLen(n int) func(*Response) error {
	return func(r *Response) error { return wantEcho(r, "body-len", strconv.Itoa(n)) }
}

// probe accepts an /echo reply whose X-Probe matches re.
func probe(re string) func(*Response) error {
	return func(r *Response) error {
		if err := wantEcho(r); err != nil {
			return err
		}
		v, err := strconv.Unquote(echoed(r)["x-probe"])
		if err != nil || !regexp.MustCompile(re).MatchString(v) {
			return fmt.Errorf("x-probe %s, want a match of %s (or 400)", echoed(r)["x-probe"], re)
		}
		return nil
	}
}

// Cases returns the suite for a server started with o (a zero
// MaxHeaderBytes means net/http's default, 1 MiB).
func Cases(o Options) []Case {
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 1 << 20
	}
	var cs []Case
	add := func(name string, run func(addr string) error) { cs = append(cs, Case{Name: name, Run: run}) }
	addTimeout := func(name string, run func(addr string) error) {
		cs = append(cs, Case{Name: name, Run: run, Timeouts: true})
	}

	// Request smuggling: message framing, RFC 9112 6.1 and the items of 6.3.
	add("rfc9112-6.3/item-3-content-length-and-chunked", func(a string) error {
		// MAY reject, or process by Transfer-Encoding alone; MUST close
		// after. The chunk is a request: a server framing by the
		// Content-Length (the chunk-size line) answers it.
		smuggled := "GET /smuggled HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
		size := fmt.Sprintf("%x\r\n", len(smuggled))
		c, r, err := exchange(a, post+"Content-Length: "+strconv.Itoa(len(size))+"\r\nTransfer-Encoding: chunked\r\n\r\n"+
			size+smuggled+"\r\n0\r\n\r\n"+next, "POST")
		if err != nil {
			return err
		}
		defer c.close()
		if r.Status != 400 {
			if err := bodyLen(len(smuggled))(r); err != nil {
				return fmt.Errorf("neither 400 nor framed by Transfer-Encoding: %w", err)
			}
		}
		return c.closed(never)
	})
	add("rfc9112-6.3/item-5-two-differing-content-lengths", func(a string) error {
		return rejected(a, post+"Content-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", 400)
	})
	add("rfc9112-6.3/item-5-content-length-list-differing", func(a string) error {
		return rejected(a, post+"Content-Length: 3, 5\r\n\r\nabcde", 400)
	})
	add("rfc9112-6.3/item-5-content-length-plus-sign", func(a string) error {
		return rejected(a, post+"Content-Length: +5\r\n\r\nabcde", 400)
	})
	add("rfc9112-6.3/item-5-content-length-negative", func(a string) error {
		return rejected(a, post+"Content-Length: -5\r\n\r\nabcde", 400)
	})
	add("rfc9110-8.6/content-length-overflowing-integers", func(a string) error {
		// MUST anticipate large numerals and not overflow parsing them:
		// refused (400, or 413 for content too large), never wrapped.
		return rejected(a, post+"Content-Length: 18446744073709551621\r\n\r\nabcde", 400, 413)
	})
	add("rfc9112-7/transfer-coding-name-case-insensitive", func(a string) error {
		return accepted(a, post+"Transfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", bodyLen(3))
	})
	add("rfc9112-5.1/content-length-with-ows-is-5", func(a string) error {
		// OWS around a field value is not part of it.
		return accepted(a, post+"Content-Length:  5 \r\n\r\nabcde", bodyLen(5))
	})
	add("rfc9110-8.6/content-length-same-value-listed", func(a string) error {
		// MAY reject, or take the one value.
		return rejectedOr(a, post+"Content-Length: 5, 5\r\n\r\nabcde", bodyLen(5), 400)
	})
	add("rfc9110-8.6/content-length-same-value-twice", func(a string) error {
		return rejectedOr(a, post+"Content-Length: 5\r\nContent-Length: 5\r\n\r\nabcde", bodyLen(5), 400)
	})
	add("rfc9112-6.3/item-4-chunked-not-final-coding", func(a string) error {
		// 400 by 6.3; 501 by 6.1 for a coding not understood (identity).
		return rejected(a, post+"Transfer-Encoding: chunked, identity\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400, 501)
	})
	add("rfc9112-6.3/item-4-transfer-encoding-without-chunked", func(a string) error {
		return rejected(a, post+"Transfer-Encoding: gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400, 501)
	})
	add("rfc9112-6.1/transfer-encoding-xchunked", func(a string) error {
		return rejected(a, post+"Transfer-Encoding: xchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400, 501)
	})
	add("net/http/chunked-applied-twice", func(a string) error {
		// RFC 9112 6.1 forbids a sender to chunk twice; what a recipient
		// does with it is left open. net/http refuses it.
		return rejected(a, post+"Transfer-Encoding: chunked, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400, 501)
	})
	add("rfc9112-6.1/transfer-encoding-in-http10-closes", func(a string) error {
		// MUST treat the framing as faulty and close after the message.
		// The chunk is a request: a server that frames by the
		// Content-Length (the chunk-size line) and reads on answers it.
		smuggled := "GET /smuggled HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
		size := fmt.Sprintf("%x\r\n", len(smuggled))
		c, _, err := exchange(a, "POST /echo HTTP/1.0\r\nHost: "+host+"\r\nConnection: keep-alive\r\nContent-Length: "+strconv.Itoa(len(size))+
			"\r\nTransfer-Encoding: chunked\r\n\r\n"+size+smuggled+"\r\n0\r\n\r\n"+next, "POST")
		if err != nil {
			return err
		}
		defer c.close()
		return c.closed(never)
	})
	add("rfc9112-7.1/chunk-size-overflow", func(a string) error {
		return badBody(a, post+"Transfer-Encoding: chunked\r\n\r\n1ffffffffffffffff0\r\nabc\r\n0\r\n\r\n")
	})
	add("rfc9112-7.1/chunk-size-hex-junk", func(a string) error {
		return badBody(a, post+"Transfer-Encoding: chunked\r\n\r\n3g\r\nabc\r\n0\r\n\r\n")
	})
	add("rfc9112-7.1/chunk-size-0x-prefix", func(a string) error {
		return badBody(a, post+"Transfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n")
	})
	add("rfc9112-7.1/chunk-data-without-crlf", func(a string) error {
		return badBody(a, post+"Transfer-Encoding: chunked\r\n\r\n3\r\nabcXX\r\n0\r\n\r\n")
	})
	add("rfc9112-7.1/chunk-size-line-ended-by-bare-lf", func(a string) error {
		// chunk = chunk-size [ chunk-ext ] CRLF: the bare LF that RFC 9112
		// 2.2 lets a recipient take in the start-line and field lines is
		// not allowed here (net/http refuses it since Go 1.24.2), for a
		// peer that takes it and one that does not frame the body
		// differently: a request smuggled.
		return badBody(a, post+"Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n")
	})
	add("rfc9112-7.1.1/chunk-extension-flood-refused", func(a string) error {
		// A server ought to limit the total length of chunk extensions
		// and answer a 4xx past it (net/http refuses a chunked body whose
		// framing, extensions included, outgrows its data by 16 KiB).
		// Here 1 MiB of extensions, each size line under 4 KiB, carry 256
		// bytes of data: refused (or closed), never answered 200.
		var b strings.Builder
		b.WriteString(post + "Transfer-Encoding: chunked\r\n\r\n")
		ext := ";x=" + strings.Repeat("e", 4000)
		for range 256 {
			b.WriteString("1" + ext + "\r\nX\r\n")
		}
		b.WriteString("0\r\n\r\n")
		return badBodyFlood(a, b.String())
	})
	add("rfc9112-7.1.1/chunk-extension-ignored", func(a string) error {
		return accepted(a, post+"Transfer-Encoding: chunked\r\n\r\n3;name=\"va lue\";x\r\nabc\r\n0\r\n\r\n", bodyLen(3))
	})
	add("rfc9112-7.1.2/chunked-trailer-section", func(a string) error {
		return accepted(a, post+"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n", bodyLen(3))
	})

	// Message syntax: RFC 9112 2 to 5, RFC 9110 5.
	add("rfc9112-2.2/bare-lf-line-endings", func(a string) error {
		// MAY take a bare LF as the line end; else the message is invalid.
		return rejectedOr(a, "GET /echo?lf HTTP/1.1\nHost: "+host+"\n\n", func(r *Response) error {
			return wantEcho(r, "target", "/echo?lf", "host", host)
		}, 400)
	})
	add("rfc9112-2.2/bare-cr-in-field-value", func(a string) error {
		// MUST consider the element invalid or replace the CR with SP.
		return rejectedOr(a, get+"X-Probe: a\rb\r\n\r\n", probe(`^(a b)?$`), 400)
	})
	add("rfc9112-2.2/whitespace-before-first-field", func(a string) error {
		// MUST reject, or consume the whitespace-preceded line unprocessed.
		return rejectedOr(a, "GET /echo HTTP/1.1\r\n X-Probe: smuggled\r\nHost: "+host+"\r\n\r\n", probe(`^$`), 400)
	})
	add("rfc9112-5.1/space-before-colon", func(a string) error {
		// MUST reject with 400; the framing is sound, so the server may
		// close or read on.
		return refused(a, get+"X-Probe : 1\r\n\r\n", 400)
	})
	add("rfc9112-5.2/obs-fold", func(a string) error {
		// MUST reject with 400 or replace the fold with SP.
		return rejectedOr(a, get+"X-Probe: a\r\n b\r\n\r\n", probe(`^a +b$`), 400)
	})
	add("rfc9110-5.5/nul-in-field-value", func(a string) error {
		// MUST reject or replace the NUL with SP.
		return rejectedOr(a, get+"X-Probe: a\x00b\r\n\r\n", probe(`^a b$`), 400)
	})
	add("rfc9110-5.1/field-name-not-a-token", func(a string) error {
		return refused(a, get+"X(bad): 1\r\n\r\n", 400)
	})
	add("rfc9112-3/request-line-two-spaces", func(a string) error {
		// SHOULD 400 or 301; MAY parse on whitespace, never on a wrong target.
		return rejectedOr(a, "GET  /echo?sp HTTP/1.1\r\nHost: "+host+"\r\n\r\n", func(r *Response) error {
			return wantEcho(r, "path", "/echo")
		}, 400, 301)
	})
	add("rfc9112-3.2.2/absolute-form-accepted", func(a string) error {
		return accepted(a, "GET http://"+host+"/echo?abs HTTP/1.1\r\nHost: "+host+"\r\n\r\n", func(r *Response) error {
			return wantEcho(r, "path", "/echo", "host", host)
		})
	})
	add("rfc9112-3.2.2/absolute-form-host-wins-over-host-field", func(a string) error {
		// MUST ignore Host and use the target's authority.
		return rejectedOr(a, "GET http://target.test/echo HTTP/1.1\r\nHost: other.test\r\n\r\n", func(r *Response) error {
			return wantEcho(r, "host", "target.test")
		}, 400, 421)
	})
	add("rfc9112-3.2.4/asterisk-form-with-get", func(a string) error {
		// Asterisk-form is for OPTIONS only: an invalid request-line, SHOULD 400.
		return refused(a, "GET * HTTP/1.1\r\nHost: "+host+"\r\n\r\n", 400)
	})
	add("rfc9112-3.2.4/asterisk-form-options", func(a string) error {
		return accepted(a, "OPTIONS * HTTP/1.1\r\nHost: "+host+"\r\n\r\n", func(r *Response) error {
			if r.Status/100 != 2 {
				return fmt.Errorf("status %d for OPTIONS *, want 2xx", r.Status)
			}
			return nil
		})
	})
	add("rfc9112-3.2/http11-without-host", func(a string) error {
		// MUST 400 (RFC 9112 3.2); nothing asks for a close.
		return refused(a, "GET /echo HTTP/1.1\r\n\r\n", 400)
	})
	add("rfc9112-3.2/two-host-fields", func(a string) error {
		return refused(a, get+"Host: other.test\r\n\r\n", 400)
	})
	add("rfc9112-3.2/invalid-host-value", func(a string) error {
		return refused(a, "GET /echo HTTP/1.1\r\nHost: a b\r\n\r\n", 400)
	})
	add("rfc9112-3.2/http10-without-host-accepted", func(a string) error {
		c, r, err := exchange(a, "GET /echo HTTP/1.0\r\n\r\n", "GET")
		if err != nil {
			return err
		}
		c.close()
		return wantEcho(r, "path", "/echo")
	})

	// Header limits.
	headOf := func(size int) string {
		h := get + "X-Probe: "
		pad := size - len(h) - len("\r\n\r\n")
		return h + strings.Repeat("a", max(pad, 0)) + "\r\n\r\n"
	}
	// The head counted whole, request line to the empty line, as
	// net/http's MaxHeaderBytes documents it.
	add("net/http/head-at-max-header-bytes-accepted", func(a string) error {
		return accepted(a, headOf(o.MaxHeaderBytes), func(r *Response) error { return wantEcho(r, "path", "/echo") })
	})
	add("rfc6585-5/head-one-over-max-header-bytes-431", func(a string) error {
		// RFC 6585 5 names the status; the bound is the server's option.
		return rejected(a, headOf(o.MaxHeaderBytes+1), 431)
	})
	add("rfc6585-5/head-far-over-max-header-bytes-431", func(a string) error {
		return rejected(a, headOf(2*o.MaxHeaderBytes+8192), 431)
	})
	// A head its limit cuts short gets 431 though its bytes are malformed
	// too (one field line, without a colon: RFC 9112 5.1), first on its
	// connection or pipelined behind a whole request: within the limit,
	// the line has not ended, so there is nothing but its size to judge.
	// RFC 9110 5.4 asks for a 4xx; 431 is net/http's answer whenever its
	// limited read of a head ends before the head does. The head is far
	// over the limit, past net/http's slack and what it buffered before.
	add("net/http/malformed-head-far-over-max-header-bytes-431-first-or-pipelined", func(a string) error {
		bad := get + "X-Probe" + strings.Repeat("a", 2*o.MaxHeaderBytes+8192) + "\r\n\r\n"
		if err := rejected(a, bad, 431); err != nil {
			return fmt.Errorf("first on its connection: %w", err)
		}
		body := strings.Repeat("b", 2000)
		c, r, err := exchange(a, post+"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body+bad+next, "POST")
		if err != nil {
			return err
		}
		defer c.close()
		if err := bodyLen(len(body))(r); err != nil {
			return fmt.Errorf("the request before: %w", err)
		}
		r, err = c.final("GET")
		if err != nil {
			return fmt.Errorf("pipelined: reading the reply: %w", err)
		}
		if r.Status != 431 {
			return fmt.Errorf("pipelined: status %d, want 431 (body %q)", r.Status, clip(r.Body))
		}
		return c.closed(never)
	})
	add("rfc9112-3/request-target-too-long-414", func(a string) error {
		// MUST 414 for a request-target longer than the server will parse.
		return rejected(a, "GET /"+strings.Repeat("a", 2*o.MaxHeaderBytes+8192)+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n", 414)
	})

	// Slowloris: RFC 9112 9.5 lets a server close an inactive connection;
	// these hold it to the timeouts it was started with, read as net/http
	// reads its ReadHeaderTimeout (the whole head) and IdleTimeout.
	addTimeout("rfc9112-9.5/head-dripped-past-read-header-timeout-cut-off", func(a string) error {
		if o.ReadHeaderTimeout <= 0 {
			return errors.New("the read header timeout option is zero")
		}
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			head := get + "X-Slow: "
			for i := 0; ; i++ {
				b := byte('a')
				if i < len(head) {
					b = head[i]
				}
				if _, err := c.c.Write([]byte{b}); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(max(o.ReadHeaderTimeout/4, 5*time.Millisecond)):
				}
			}
		}()
		return cutOff(c, o.ReadHeaderTimeout+never)
	})
	// The idle cases bound the close from both sides: still open (and
	// serving) a third of the way into the timeout, closed by the timeout
	// and never. Load only makes a close later, so the lower bound holds
	// on a slow machine.
	addTimeout("rfc9112-9.5/idle-keep-alive-closed-after-idle-timeout", func(a string) error {
		if o.IdleTimeout <= 0 {
			return errors.New("the idle timeout option is zero")
		}
		c, r, err := exchange(a, get+"\r\n", "GET")
		if err != nil {
			return err
		}
		defer c.close()
		if r.HasToken("Connection", "close") {
			return errors.New("an HTTP/1.1 reply closed the connection unasked (RFC 9112 9.3)")
		}
		if err := openFor(c, o.IdleTimeout/3); err != nil {
			return fmt.Errorf("idle for a third of the idle timeout: %w", err)
		}
		if err := c.send(next); err != nil {
			return fmt.Errorf("a request a third of the way into the idle timeout: %w", err)
		}
		if err := c.wantNext(); err != nil {
			return fmt.Errorf("a third of the way into the idle timeout: %w", err)
		}
		if err := openFor(c, o.IdleTimeout/3); err != nil {
			return fmt.Errorf("idle for a third of the idle timeout after a second reply: %w", err)
		}
		return cutOff(c, o.IdleTimeout+never)
	})
	addTimeout("rfc9112-9.5/silent-new-connection-closed", func(a string) error {
		if o.IdleTimeout <= 0 && o.ReadHeaderTimeout <= 0 {
			return errors.New("no timeout option is set")
		}
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		// The first of the two timeouts that may apply to a connection
		// with no byte yet bounds the close from below.
		least := o.IdleTimeout
		if least <= 0 || (o.ReadHeaderTimeout > 0 && o.ReadHeaderTimeout < least) {
			least = o.ReadHeaderTimeout
		}
		if err := openFor(c, least/3); err != nil {
			return fmt.Errorf("a silent new connection, a third of the way into its timeout: %w", err)
		}
		return cutOff(c, max(o.IdleTimeout, o.ReadHeaderTimeout)+never)
	})
	addTimeout("rfc9112-9.5/pipelined-head-in-parts-gets-its-own-read-header-timeout", func(a string) error {
		// The read header timeout bounds each head, as net/http reads it:
		// from when the server starts reading that head, not from the
		// connection's start or an earlier head's. A POST whose body came
		// whole with its head arrives six tenths of the timeout after the
		// connection opened, with the first part of the next head behind
		// it; the rest of that head comes six tenths of the timeout later,
		// past the first head's bound but well within its own.
		//
		// A client stalled on a loaded machine may itself send a head
		// late: an attempt whose first head went out, or whose second
		// head's two parts went out, the timeout or more apart (as this
		// client measured, a span no shorter than the server's) proves
		// nothing and is made again, at most three times in all. A server
		// that bounds every head from the connection's start fails each
		// attempt with its parts well inside the timeout.
		if o.ReadHeaderTimeout <= 0 {
			return errors.New("the read header timeout option is zero")
		}
		var err error
		for attempt := 1; attempt <= 3; attempt++ {
			var stalled time.Duration
			if stalled, err = pipelinedHeadInParts(a, o.ReadHeaderTimeout); err == nil || stalled < o.ReadHeaderTimeout {
				return err
			}
		}
		return fmt.Errorf("three attempts, each with a head sent late by a stalled client: %w", err)
	})

	// Pipelining: RFC 9112 9.3.2, replies in the order of the requests.
	add("rfc9112-9.3.2/three-pipelined-in-one-write", func(a string) error {
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		if err := c.send("GET /echo?1 HTTP/1.1\r\nHost: " + host + "\r\n\r\n" +
			"POST /echo?2 HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 11\r\n\r\nhello world" +
			"GET /echo?3 HTTP/1.1\r\nHost: " + host + "\r\n\r\n"); err != nil {
			return err
		}
		for i, want := range [][]string{{"target", "/echo?1", "body-len", "0"},
			{"target", "/echo?2", "method", "POST", "body-len", "11", "body-sha256", "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"},
			{"target", "/echo?3", "body-len", "0"}} {
			r, err := c.final("GET")
			if err != nil {
				return fmt.Errorf("reply %d: %w", i+1, err)
			}
			if err := wantEcho(r, want...); err != nil {
				return fmt.Errorf("reply %d: %w", i+1, err)
			}
		}
		return nil
	})
	add("rfc9112-9.3.2/pipelined-after-chunked-body", func(a string) error {
		return accepted(a, post+"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", func(r *Response) error {
			return wantEcho(r, "body-len", "11", "body-sha256", "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")
		})
	})

	// Expect: 100-continue, RFC 9110 10.1.1.
	add("rfc9110-10.1.1/100-continue-before-final-reply", func(a string) error {
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		if err := c.send(post + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n"); err != nil {
			return err
		}
		r, err := c.read("POST")
		if err != nil {
			return fmt.Errorf("waiting for 100 before sending the body: %w", err)
		}
		if r.Status != 100 {
			return fmt.Errorf("status %d before the body was sent, want 100", r.Status)
		}
		if err := c.send("hello"); err != nil {
			return err
		}
		if r, err = c.final("POST"); err != nil {
			return err
		}
		return wantEcho(r, "body-len", "5")
	})
	add("rfc9110-15.2/no-100-continue-to-http10", func(a string) error {
		// A server MUST NOT send a 1xx response to an HTTP/1.0 client.
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		if err := c.send("POST /echo HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello"); err != nil {
			return err
		}
		r, err := c.read("POST")
		if err != nil {
			return err
		}
		if r.Status < 200 {
			return fmt.Errorf("a %d to an HTTP/1.0 request", r.Status)
		}
		return wantEcho(r, "body-len", "5")
	})
	add("rfc9110-10.1.1/expect-unread-body-final-reply-then-close-or-drain", func(a string) error {
		// A final status without 100; the server then closes or reads the
		// content on (the content is a request: it must not be answered).
		body := "GET /smuggled HTTP/1.1\r\nHost: " + host + "\r\nX-Pad: "
		body += strings.Repeat("a", 1000-len(body)-4) + "\r\n\r\n"
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		if err := c.send("POST /nobody HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n"); err != nil {
			return err
		}
		r, err := c.read("POST")
		if err != nil {
			return err
		}
		if r.Status != 200 || string(clip(r.Body)) != "early" {
			return fmt.Errorf("status %d body %q, want the handler's 200 \"early\" with no 100", r.Status, clip(r.Body))
		}
		if r.HasToken("Connection", "close") {
			return c.closed(never)
		}
		if err := c.send(body + next); err != nil {
			return nil // closed: allowed
		}
		r, err = c.final("GET")
		if ended(err) {
			return nil // closed (or reset) without saying so: the RFC's SHOULD, not a MUST
		}
		if err != nil {
			return err
		}
		return wantEcho(r, "target", "/echo?next")
	})

	// Half-closed and vanished clients.
	add("net/http/half-closed-client-still-answered", func(a string) error {
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		if err := c.send(get + "\r\n"); err != nil {
			return err
		}
		if err := c.c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			return err
		}
		r, err := c.final("GET")
		if err != nil {
			return fmt.Errorf("no reply after the client's half-close: %w", err)
		}
		if err := wantEcho(r, "path", "/echo"); err != nil {
			return err
		}
		return c.closed(never)
	})
	add("net/http/half-closed-client-context-watcher-ends", func(a string) error {
		// The request context ends once the client half-closes (net/http
		// at once: its background reader sees EOF), well before the
		// handler's own timer of never; what comes back is the handler's
		// whole reply or nothing, the server's choice.
		id := newWaitID()
		defer forget(id)
		rec := record(id)
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		if err := c.send("GET /wait?id=" + id + "&max=" + (2 * never).String() + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"); err != nil {
			return err
		}
		if err := waitFor(rec.started, "the handler starting"); err != nil {
			return err
		}
		if err := c.c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			return err
		}
		if err := waitFor(rec.ended, "the request context ending after the client's half-close"); err != nil {
			return err
		}
		if rec.how != "context" {
			return fmt.Errorf("handler ended by its %s, not its context", rec.how)
		}
		r, err := c.final("GET")
		if ended(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if string(clip(r.Body)) != "ended="+rec.how {
			return fmt.Errorf("reply %d %q, handler ended by its %s", r.Status, r.Body, rec.how)
		}
		return nil
	})
	add("net/http/client-gone-ends-request-context", func(a string) error {
		id := newWaitID()
		defer forget(id)
		rec := record(id)
		c, err := dial(a)
		if err != nil {
			return err
		}
		if err := c.send("GET /wait?id=" + id + "&max=1m HTTP/1.1\r\nHost: " + host + "\r\n\r\n"); err != nil {
			c.close()
			return err
		}
		if err := waitFor(rec.started, "the handler starting"); err != nil {
			c.close()
			return err
		}
		c.close()
		if err := waitFor(rec.ended, "the request context ending after the client closed"); err != nil {
			return err
		}
		if rec.how != "context" {
			return fmt.Errorf("handler ended by its %s, not its context", rec.how)
		}
		return nil
	})

	// Persistence: RFC 9112 9.3 and 9.6.
	add("rfc9112-9.3/http10-closes-without-keep-alive", func(a string) error {
		c, r, err := exchange(a, "GET /echo HTTP/1.0\r\nHost: "+host+"\r\n\r\n", "GET")
		if err != nil {
			return err
		}
		defer c.close()
		if err := wantEcho(r, "proto", "HTTP/1.0"); err != nil {
			return err
		}
		return c.closed(never)
	})
	add("rfc9112-9.3/http10-keep-alive-persists-or-closes", func(a string) error {
		c, r, err := exchange(a, "GET /echo HTTP/1.0\r\nHost: "+host+"\r\nConnection: keep-alive\r\n\r\n", "GET")
		if err != nil {
			return err
		}
		defer c.close()
		if err := wantEcho(r, "proto", "HTTP/1.0"); err != nil {
			return err
		}
		if !r.HasToken("Connection", "keep-alive") {
			return c.closed(never)
		}
		if err := c.send("GET /echo?next HTTP/1.0\r\nHost: " + host + "\r\nConnection: keep-alive\r\n\r\n"); err != nil {
			return err
		}
		r, err = c.final("GET")
		if err != nil {
			return fmt.Errorf("second request on a kept-alive HTTP/1.0 connection: %w", err)
		}
		return wantEcho(r, "target", "/echo?next")
	})
	add("rfc9112-6.1/no-chunked-reply-to-http10", func(a string) error {
		// A server MUST NOT send Transfer-Encoding to an HTTP/1.0 request.
		c, r, err := exchange(a, "GET /stream HTTP/1.0\r\nHost: "+host+"\r\n\r\n", "GET")
		if err != nil {
			return err
		}
		defer c.close()
		if len(r.Get("Transfer-Encoding")) > 0 {
			return fmt.Errorf("transfer-encoding %q in a reply to HTTP/1.0", r.Get("Transfer-Encoding"))
		}
		if want := strings.Join(streamParts, ""); string(clip(r.Body)) != want {
			return fmt.Errorf("body %q, want %q", r.Body, want)
		}
		return nil
	})
	add("rfc9112-9.6/connection-close-closes-after-reply", func(a string) error {
		// MUST close after the reply, MUST NOT process further requests.
		c, r, err := exchange(a, "GET /echo?1 HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"+next, "GET")
		if err != nil {
			return err
		}
		defer c.close()
		if err := wantEcho(r, "target", "/echo?1"); err != nil {
			return err
		}
		return c.closed(never)
	})

	// Bodiless replies: RFC 9112 6.3 item 1, RFC 9110 8.6.
	add("rfc9110-9.3.2/head-reply-has-no-body", func(a string) error {
		c, r, err := exchange(a, "HEAD /echo HTTP/1.1\r\nHost: "+host+"\r\n\r\n"+next, "HEAD")
		if err != nil {
			return err
		}
		defer c.close()
		if r.Status != 200 {
			return fmt.Errorf("status %d for HEAD", r.Status)
		}
		return c.wantNext()
	})
	for _, code := range []int{204, 304} {
		add(fmt.Sprintf("rfc9110-6.4.1/%d-reply-has-no-body", code), func(a string) error {
			c, r, err := exchange(a, fmt.Sprintf("GET /status?code=%d HTTP/1.1\r\nHost: %s\r\n\r\n%s", code, host, next), "GET")
			if err != nil {
				return err
			}
			defer c.close()
			if r.Status != code {
				return fmt.Errorf("status %d, want %d", r.Status, code)
			}
			if code == 204 && (len(r.Get("Content-Length")) > 0 || len(r.Get("Transfer-Encoding")) > 0) {
				// RFC 9110 8.6, RFC 9112 6.1: MUST NOT.
				return errors.New("a 204 with Content-Length or Transfer-Encoding")
			}
			return c.wantNext()
		})
	}

	// Handler panics (net/http: the connection is dropped, no reply is
	// made up of what the handler had written).
	add("net/http/panic-before-write-no-reply", func(a string) error {
		return panicked(a, "/panic")
	})
	add("net/http/panic-after-write-no-complete-reply", func(a string) error {
		return panicked(a, "/panic?write=1")
	})
	add("rfc9112-7.1/panic-after-flush-chunked-left-unterminated", func(a string) error {
		// The body so far must not read as complete (RFC 9112 8: an
		// incomplete message), nor run into another reply.
		c, r, err := exchange(a, "GET /panic?flush=1 HTTP/1.1\r\nHost: "+host+"\r\n\r\n"+next, "GET")
		if err == nil {
			defer c.close()
			return fmt.Errorf("a complete %d reply (body %q) from a handler that panicked", r.Status, clip(r.Body))
		}
		if !errors.Is(err, ErrIncomplete) && !ended(err) {
			return err
		}
		return nil
	})

	// Unread request bodies.
	add("net/http/unread-body-over-256kib-closes", func(a string) error {
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		const n = 300 << 10
		go c.send("POST /nobody HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: " + strconv.Itoa(n) + "\r\n\r\n" + strings.Repeat("b", n))
		r, err := c.final("POST")
		if err != nil {
			return err
		}
		if r.Status != 200 || string(clip(r.Body)) != "early" {
			return fmt.Errorf("status %d body %q, want 200 \"early\"", r.Status, clip(r.Body))
		}
		return c.closed(never)
	})
	add("net/http/unread-small-body-drained-connection-reused", func(a string) error {
		return accepted(a, "POST /nobody HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: 1024\r\n\r\n"+strings.Repeat("b", 1024), func(r *Response) error {
			if r.Status != 200 || string(clip(r.Body)) != "early" {
				return fmt.Errorf("status %d body %q, want 200 \"early\"", r.Status, clip(r.Body))
			}
			return nil
		})
	})

	// Response framing: RFC 9112 6.3 and 7.1.
	add("rfc9112-7.1/flushed-reply-is-chunked", func(a string) error {
		return accepted(a, "GET /stream HTTP/1.1\r\nHost: "+host+"\r\n\r\n", func(r *Response) error {
			if !r.Chunked {
				return fmt.Errorf("a flushed reply to HTTP/1.1 not chunked (fields %q)", r.Fields)
			}
			if want := strings.Join(streamParts, ""); string(clip(r.Body)) != want {
				return fmt.Errorf("body %q, want %q", r.Body, want)
			}
			return nil
		})
	})
	add("rfc9112-6.3/item-6-content-length-short-by-handler-closes", func(a string) error {
		// The handler wrote 5 of a declared 10: the body is incomplete
		// (RFC 9112 8), and no next reply may fill it out.
		c, r, err := exchange(a, "GET /short HTTP/1.1\r\nHost: "+host+"\r\n\r\n"+next, "GET")
		if err == nil {
			defer c.close()
			return fmt.Errorf("the declared length was filled out: body %q", clip(r.Body))
		}
		if !errors.Is(err, ErrIncomplete) && !ended(err) {
			return err
		}
		return nil
	})
	add("rfc9112-6.3/item-6-content-length-long-by-handler-truncated", func(a string) error {
		// The handler wrote 10 of a declared 5: only 5 go out, and what
		// follows is the next reply or the close.
		c, r, err := exchange(a, "GET /long HTTP/1.1\r\nHost: "+host+"\r\n\r\n"+next, "GET")
		if err != nil {
			return err
		}
		defer c.close()
		if string(clip(r.Body)) != "long-" {
			return fmt.Errorf("body %q, want the declared 5 bytes", clip(r.Body))
		}
		r, err = c.final("GET")
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("after the reply: %w", err)
		}
		return wantEcho(r, "target", "/echo?next")
	})
	return cs
}

// pipelinedHeadInParts is one attempt of the pipelined-head case: it
// returns why it failed and how far apart (from the dial, or between the
// second head's parts) the client sent the head that failed.
func pipelinedHeadInParts(a string, timeout time.Duration) (time.Duration, error) {
	dialled := time.Now()
	c, err := dial(a)
	if err != nil {
		return 0, err
	}
	defer c.close()
	part := timeout * 6 / 10
	time.Sleep(part)
	begun := time.Now()
	if err := c.send(post + "Content-Length: 11\r\n\r\nhello world" + next[:20]); err != nil {
		return 0, err
	}
	first := time.Since(dialled)
	r, err := c.final("POST")
	if err != nil {
		return first, fmt.Errorf("a whole POST sent %s after the dial: %w", first, err)
	}
	if err := wantEcho(r, "body-len", "11"); err != nil {
		return 0, err
	}
	time.Sleep(part)
	if err := c.send(next[20:]); err != nil {
		return 0, fmt.Errorf("the rest of the next head, %s after its start: %w", part, err)
	}
	second := time.Since(begun)
	if err := c.wantNext(); err != nil {
		return second, fmt.Errorf("a head whose rest came %s after its start: %w", second, err)
	}
	return 0, nil
}

// cutOff: within the bound the server closes the connection, after at
// most a 408 (RFC 9110 15.5.9) or another 4xx.
func cutOff(c *client, within time.Duration) error {
	c.c.SetReadDeadline(time.Now().Add(within))
	if _, err := c.br.Peek(1); err != nil {
		if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
			return fmt.Errorf("connection still open after %s", within)
		}
		return nil
	}
	r, err := ReadResponse(c.br, "GET")
	if err != nil && !(r != nil && r.Status/100 == 4 && ended(err)) {
		// A 4xx whose close-delimited body ends in a reset is cut off too:
		// the server closed with the dripped bytes unread.
		return fmt.Errorf("reading what came instead of the close: %w", err)
	}
	if r.Status/100 != 4 {
		return fmt.Errorf("status %d where the connection should be cut off", r.Status)
	}
	if err != nil {
		return nil
	}
	return c.closed(never)
}

// openFor: for d the server neither closes the connection nor sends a
// byte (the lower bound of a timeout).
func openFor(c *client, d time.Duration) error {
	c.c.SetReadDeadline(time.Now().Add(d))
	_, err := c.br.Peek(1)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	if err != nil {
		return fmt.Errorf("connection closed within %s: %v", d, err)
	}
	return fmt.Errorf("bytes within %s, where the connection should sit idle", d)
}

// panicked: a request to a panicking handler path gets nothing or a 5xx,
// never a complete 2xx, and what follows is not corrupted.
func panicked(a, target string) error {
	c, r, err := exchange(a, "GET "+target+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n"+next, "GET")
	if ended(err) || errors.Is(err, ErrIncomplete) {
		return nil
	}
	if err != nil {
		return err
	}
	defer c.close()
	if r.Status < 500 {
		return fmt.Errorf("a complete %d reply (body %q) from a handler that panicked", r.Status, clip(r.Body))
	}
	r, err = c.final("GET")
	if ended(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("after the 5xx: %w", err)
	}
	return wantEcho(r, "target", "/echo?next")
}
