//go:build race

package rawsock

import (
	"runtime"
	"syscall"
	"unsafe"
)

// The race detector cannot see the kernel copy bytes into and out of p,
// nor that a write on one socket happens before the read of those bytes
// on another. The syscall package tells it both for its own reads and
// writes, ordering every write before every later read on one variable of
// its own. The raw calls join that order through the syscall package's
// calls themselves, with zero bytes: a zero-byte read acquires it, a
// zero-byte write releases into it, whatever reads or wrote the other end
// (net.Conn, os.File or this package). Race builds only.

func raceWrote(p []byte) { runtime.RaceWriteRange(unsafe.Pointer(&p[0]), len(p)) }
func raceRead(p []byte)  { runtime.RaceReadRange(unsafe.Pointer(&p[0]), len(p)) }

func raceAcquire(fd uintptr)      { _, _ = syscall.Read(int(fd), nil) }
func raceReleaseMerge(fd uintptr) { _, _ = syscall.Write(int(fd), nil) }
