//go:build !unix

package deadaddr

import "net"

// Hold returns the address of a listener it opened and closed: on a
// system without the unix socket calls the port is free, not held, and
// another listener may be given it.
func Hold(t TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("deadaddr: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
