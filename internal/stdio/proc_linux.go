package stdio

import "syscall"

// sysProcAttr puts the child in a process group of its own, so that a
// signal to the group reaches what it started (npx's node, a shell's
// children), and asks the kernel to kill it if the sidecar dies without
// ending it (PR_SET_PDEATHSIG; it fires when the thread that started the
// child exits, which for Go's runtime threads means the process).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
