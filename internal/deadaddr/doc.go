// Package deadaddr owns the tests' loopback TCP address that nothing
// answers: Hold binds a socket to a free port of 127.0.0.1 and never
// listens on it, so a connection to the address is refused, and while the
// test holds it no other listener, of this process or another, can be given
// the port. A port found free by opening and closing a listener is not
// dead: the next listener anywhere on the machine may be given it, and a
// test that wanted "connection refused" then meets a server.
//
// Only tests import it. It must not listen, accept or dial; it imports
// nothing of the module.
package deadaddr

import "time"

// TB is the part of testing.TB Hold uses (this package is built as
// production code, which may not import package testing).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// hold is how long Hold keeps trying when binding fails for want of a
// free port (a machine out of ephemeral ports for a moment).
const hold = 10 * time.Second
