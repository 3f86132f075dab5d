//go:build unix && !linux

package stdio

import "syscall"

// sysProcAttr puts the child in a process group of its own; only Linux
// has a parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
