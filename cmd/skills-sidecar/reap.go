package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// reapOrphans waits for orphaned processes while the sidecar runs as PID 1
// (the container's entrypoint, with a stdio upstream): what a child started
// and left behind is re-parented to PID 1 and stays a zombie until waited
// for. Processes the stdio transport started (ours) are left to their own
// Wait. It runs on each SIGCHLD, and every minute for one missed, until
// ctx ends.
func reapOrphans(ctx context.Context, ours func(int) bool) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-tick.C:
		}
		reapZombies(os.Getpid(), ours)
	}
}

// reapZombies waits for every zombie whose parent is self and that skip
// does not name. It reads /proc, so a child exec.Cmd waits for itself is
// never taken from under it: only exited processes are waited for, by pid.
func reapZombies(self int, skip func(int) bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 || f[0] != "Z" || f[1] != strconv.Itoa(self) || skip(pid) {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}
