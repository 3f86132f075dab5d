//go:build unix

package hop

import (
	"errors"
	"net"
	"syscall"

	"github.com/skills-sidecar/skills-sidecar/internal/rawsock"
)

// alive reports whether a pooled connection is still open and quiet: a
// non-blocking peek finds neither end of stream nor unexpected bytes. It
// costs one system call and catches an upstream that closed (or restarted)
// while the connection sat idle, which net/http learns from the read
// goroutine this package does without.
func alive(nc net.Conn) bool { return newPeeker(nc).alive() }

// peeker does alive's peek on one connection. A connection keeps its
// peeker for life, so a reuse allocates nothing: the raw connection and
// the callback are made once, at dial.
type peeker struct {
	rc   syscall.RawConn // nil: the connection has no descriptor to peek at
	bad  bool            // the descriptor could not be had: never alive
	read func(fd uintptr) bool
	buf  [1]byte
	err  error
}

func newPeeker(nc net.Conn) *peeker {
	pk := &peeker{}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return pk
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		pk.bad = true
		return pk
	}
	pk.rc = rc
	pk.read = func(fd uintptr) bool {
		_, pk.err = rawsock.Peek(fd, pk.buf[:])
		return true
	}
	return pk
}

func (pk *peeker) alive() bool {
	switch {
	case pk.bad:
		return false
	case pk.rc == nil:
		return true
	}
	pk.err = nil
	if err := pk.rc.Read(pk.read); err != nil {
		return false
	}
	switch perr := pk.err; {
	case errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK):
		return true // nothing to read: open and quiet
	case perr != nil:
		return false
	default:
		return false // n == 0 is end of stream; n > 0 is a stray byte
	}
}
