//go:build linux && !386

package rawsock

import (
	"syscall"
	"unsafe"
)

// enabled: the raw path is taken on Linux (not 386, see raw_other.go).
const enabled = true

// recv reads a socket as a raw call: recvfrom(2) with MSG_DONTWAIT, which
// never waits even where the socket was put in blocking mode behind the
// connection's back (os.File.Fd on a dup of it does): a raw call that slept
// in the kernel would keep its processor and stop every collection.
func recv(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)),
		syscall.MSG_DONTWAIT, 0, 0)
	return afterRead(fd, p, r, errno)
}

// send writes a socket as a raw call: sendto(2) with MSG_DONTWAIT, for the
// reason recv gives (no MSG_NOSIGNAL: SIGPIPE is as net.Conn's write has it).
func send(fd uintptr, p []byte) (int, syscall.Errno) {
	raceReleaseMerge(fd)
	r, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)),
		syscall.MSG_DONTWAIT, 0, 0)
	return afterWrite(p, r, errno)
}

// read is read(2) as a raw call, for a pipe: fileConn lets only a
// non-blocking one take it, and a pipe has no MSG_DONTWAIT.
func read(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return afterRead(fd, p, r, errno)
}

// write is write(2) as a raw call, for a pipe (see read).
func write(fd uintptr, p []byte) (int, syscall.Errno) {
	raceReleaseMerge(fd)
	r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return afterWrite(p, r, errno)
}

// afterRead tells the race detector what a raw read did.
func afterRead(fd uintptr, p []byte, r uintptr, errno syscall.Errno) (int, syscall.Errno) {
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

// afterWrite tells the race detector what a raw write did.
func afterWrite(p []byte, r uintptr, errno syscall.Errno) (int, syscall.Errno) {
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
	return afterRead(fd, p, r, errno)
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
