//go:build unix

package deadaddr

import (
	"net"
	"strconv"
	"syscall"
	"time"
)

// Hold returns "127.0.0.1:port" for a port bound by a socket that never
// listens, held until the test ends.
func Hold(t TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("deadaddr: socket: %v", err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	// No SO_REUSEADDR: no other socket may bind the port while this one
	// holds it, listening or not.
	for end := time.Now().Add(hold); ; time.Sleep(10 * time.Millisecond) {
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
		if err == nil || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		t.Fatalf("deadaddr: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("deadaddr: getsockname: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("deadaddr: bound to %T, want an IPv4 address", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port))
}
