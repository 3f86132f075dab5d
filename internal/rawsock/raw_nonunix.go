//go:build !unix

package rawsock

import "syscall"

// enabled: elsewhere every connection keeps net.Conn's own calls.
const enabled = false

func read(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EWINDOWS }
func write(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.EWINDOWS }
func recv(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EWINDOWS }
func send(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EWINDOWS }
func peek(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EWINDOWS }

func oneWay(uintptr, bool) bool { return false }
