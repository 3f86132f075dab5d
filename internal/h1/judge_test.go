package h1_test

import (
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/h1"
	"github.com/skills-sidecar/skills-sidecar/internal/h1fault"
)

// knownH1 are the cases of the RFC 9112 judge (internal/h1fault) this
// server fails, each with why; empty unless a case holds it to a choice
// the RFC leaves open and the server made the other one.
var knownH1 = map[string]string{}

// TestJudge runs every case of the judge, written from RFC 9112 and 9110
// apart from this package, against this server: each passes, or fails as
// knownH1 says (a listed case that passes is an error too).
func TestJudge(t *testing.T) {
	// The timeout cases run against a server with short timeouts, so they
	// end soon; the rest against one with long ones, so a stall of a
	// loaded machine under -race cuts none of them off. Short is still
	// seconds: the timeout cases leave the client two fifths of the read
	// header timeout (a head in parts) and two thirds of the idle timeout
	// (a third of it idle) for its own pauses, which at 500 ms and 1 s a
	// loaded machine running every case at once could pass.
	short := h1fault.Options{MaxHeaderBytes: 8192, ReadHeaderTimeout: 2 * time.Second, IdleTimeout: 3 * time.Second}
	long := h1fault.Options{MaxHeaderBytes: 8192, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
	shortAddr, longAddr := serveJudged(t, short), serveJudged(t, long)
	var cases []h1fault.Case
	for _, c := range h1fault.Cases(short) {
		if c.Timeouts {
			cases = append(cases, c)
		}
	}
	for _, c := range h1fault.Cases(long) {
		if !c.Timeouts {
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			addr := longAddr
			if c.Timeouts {
				addr = shortAddr
			}
			err := c.Run(addr)
			why, known := knownH1[c.Name]
			switch {
			case known && err == nil:
				t.Errorf("listed as a known departure (%s) but passes", why)
			case known:
				t.Logf("known departure: %s: %v", why, err)
			case err != nil:
				t.Error(err)
			}
		})
	}
}

// serveJudged starts this server with the judge's Handler on loopback,
// with the limits o.
func serveJudged(t *testing.T, o h1fault.Options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &h1.Server{Handler: h1fault.Handler(), ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: o.IdleTimeout,
		MaxHeaderBytes: o.MaxHeaderBytes, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}
