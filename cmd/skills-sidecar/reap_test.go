package main

import (
	"os"
	"os/exec"
	"testing"
)

// TestReapZombies: a child that exited and that nobody waits for is
// reaped, unless skip names it.
func TestReapZombies(t *testing.T) {
	t.Parallel()
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	zombie := func() bool {
		b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
		return err == nil && processState(b) == "Z"
	}
	waitFor(t, "the child to become a zombie", zombie, nil)
	only := func(skipIt bool) func(int) bool { return func(p int) bool { return p != pid || skipIt } }
	reapZombies(os.Getpid(), only(true))
	if !zombie() {
		t.Fatal("a skipped child was reaped")
	}
	reapZombies(os.Getpid(), only(false))
	if zombie() {
		t.Error("the zombie child was not reaped")
	}
}
