package rawsock

import (
	"syscall"
	"unsafe"
)

// enabled: the raw path is taken on Linux.
const enabled = true

// read is read(2) as a raw call. fd is non-blocking: it never waits.
func read(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	n := int(r)
	if n > 0 {
		raceWrote(p[:n])
	}
	raceAcquire(fd)
	return n, 0
}

// write is write(2) as a raw call. fd is non-blocking: it never waits.
func write(fd uintptr, p []byte) (int, syscall.Errno) {
	raceReleaseMerge(fd)
	r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	n := int(r)
	if n > 0 {
		raceRead(p[:n])
	}
	return n, 0
}

// peek is recvfrom(2) with MSG_PEEK|MSG_DONTWAIT as a raw call.
func peek(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	n := int(r)
	if n > 0 {
		raceWrote(p[:n])
	}
	return n, 0
}

// oneWay says whether fd is non-blocking and open one way only: for
// reading (write false) or for writing (write true), by fcntl(2) F_GETFL.
func oneWay(fd uintptr, write bool) bool {
	flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if errno != 0 {
		return false
	}
	want := uintptr(syscall.O_RDONLY)
	if write {
		want = syscall.O_WRONLY
	}
	return flags&syscall.O_NONBLOCK != 0 && flags&syscall.O_ACCMODE == want
}
