//go:build !unix

package hop

import "net"

// alive cannot peek on this platform; a closed connection shows itself on
// the next round trip, which is retried when that is safe.
func alive(net.Conn) bool { return true }

type peeker struct{}

func newPeeker(net.Conn) *peeker { return &peeker{} }

func (*peeker) alive() bool { return true }

// watch cannot peek on this platform: a request's write waits for the
// upstream to read it, or fail, even behind an early 2xx answer.
func (*peeker) watch(net.Conn, *headLimit) (func() bool, <-chan struct{}) {
	return func() bool { return false }, nil
}
