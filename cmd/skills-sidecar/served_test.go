package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// served is the binary run as its own process, for the tests that judge
// what a signal does to it (a test's own process cannot take a signal's
// default action, nor be judged by its exit). Its stderr is kept; the
// test's cleanup kills it, by its handle, unless the test saw it exit.
type served struct {
	cmd    *exec.Cmd
	errOut *syncBuffer
	exited chan error // the process's exit, once
	done   bool       // the test has taken its exit from exited
}

func startServed(t *testing.T, args ...string) *served {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: exec.Command(exe, args...), errOut: &syncBuffer{}, exited: make(chan error, 1)}
	s.cmd.Env = append(os.Environ(), asMain+"=1")
	s.cmd.Stderr = s.errOut
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if !s.done {
			_ = s.cmd.Process.Kill() // the process this test started, by its handle
			<-s.exited
		}
	})
	return s
}

// logged reports whether the process has logged a JSON record with msg.
func (s *served) logged(msg string) func() bool {
	return func() bool { return strings.Contains(s.errOut.String(), `"msg":"`+msg+`"`) }
}

// detail is the log so far, for a failure's message.
func (s *served) detail() string { return "log:\n" + s.errOut.String() }
