//go:build unix

package hop

import (
	"errors"
	"net"
	"syscall"
)

// alive reports whether a pooled connection is still open and quiet: a
// non-blocking peek finds neither end of stream nor unexpected bytes. It
// costs one system call and catches an upstream that closed (or restarted)
// while the connection sat idle, which net/http learns from the read
// goroutine this package does without.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		_, _, perr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	})
	if err != nil {
		return false
	}
	switch {
	case errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK):
		return true // nothing to read: open and quiet
	case perr != nil:
		return false
	default:
		return false // n == 0 is end of stream; n > 0 is a stray byte
	}
}
