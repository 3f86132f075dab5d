//go:build unix && (!linux || 386)

package rawsock

import "syscall"

// enabled: elsewhere (and on linux/386, whose system calls have no
// recvfrom of their own) every connection keeps net.Conn's own calls.
const enabled = false

func read(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }
func write(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
func recv(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }
func send(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }

// peek is recvfrom(2) with MSG_PEEK|MSG_DONTWAIT, through the syscall package.
func peek(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, err := syscall.Recvfrom(int(fd), p, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if errno, ok := err.(syscall.Errno); ok {
		return 0, errno
	}
	if err != nil {
		return 0, syscall.EIO
	}
	return n, 0
}

func oneWay(uintptr, bool) bool { return false }
