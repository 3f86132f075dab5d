//go:build race

package rawsock

import (
	"runtime"
	"unsafe"
)

// ioSync is what the race detector orders socket reads after writes on, as
// the syscall package does for its own reads and writes: the kernel's copy
// into and out of p is otherwise invisible to it.
var ioSync int64

func raceWrote(p []byte) { runtime.RaceWriteRange(unsafe.Pointer(&p[0]), len(p)) }
func raceRead(p []byte)  { runtime.RaceReadRange(unsafe.Pointer(&p[0]), len(p)) }
func raceAcquire()       { runtime.RaceAcquire(unsafe.Pointer(&ioSync)) }
func raceReleaseMerge()  { runtime.RaceReleaseMerge(unsafe.Pointer(&ioSync)) }
