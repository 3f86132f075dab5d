package harness

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// spendCPU keeps the calling goroutine's thread busy until that thread has
// spent d of CPU (its CLOCK_THREAD_CPUTIME_ID), so d is CPU the process is
// charged for and not wall-clock time: a thread the kernel preempts
// meanwhile spins longer. The goroutine holds its thread for the while,
// so the clock it reads is the one it runs on.
func spendCPU(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	if !ok {
		return
	}
	for {
		now, ok := threadCPU()
		if !ok || now-start >= d {
			return
		}
	}
}

// threadCPU is the CPU the calling thread has spent, and whether the
// clock could be read.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
