//go:build unix

package deadaddr

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestHeldAddressRefusesAndCannotBeTaken: a connection to the held
// address is refused (RST, ECONNREFUSED: nothing listens), a listener
// asking for that port is refused it, and listeners asking for any port
// are never given it.
func TestHeldAddressRefusesAndCannotBeTaken(t *testing.T) {
	addr := Hold(t)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("a connection to %s was accepted", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a listener was given the held address %s", addr)
	}
	for range 200 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := ln.Addr().String()
		ln.Close()
		if got == addr {
			t.Fatalf("a listener on any port was given the held address %s", addr)
		}
	}
}
