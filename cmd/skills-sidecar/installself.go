package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// installSelfName is the file install-self writes into its folder.
const installSelfName = "skills-sidecar"

// runInstallSelf copies the running binary to DIR/skills-sidecar with mode
// 0755: the injector's init container does this for a stdio server's
// container (skills-sidecar.io/upstream-stdio), since the image has no
// shell or cp. The copy is written beside the target and renamed over it,
// so a restarted init container never leaves half a binary behind.
func runInstallSelf(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || isHelp(args[0]) || args[0] == "" {
		fmt.Fprint(stderr, "Usage: skills-sidecar install-self DIR\n\nCopies this binary to DIR/"+installSelfName+" (mode 0755), for a container whose image lacks it.\n")
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "skills-sidecar install-self: %v\n", err)
		return exitFail
	}
	dst := filepath.Join(args[0], installSelfName)
	if err := copyExecutable(self, dst); err != nil {
		fmt.Fprintf(stderr, "skills-sidecar install-self: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "installed %s\n", dst)
	return exitOK
}

// copyExecutable copies src to dst with mode 0755 through a temporary file
// in dst's folder.
func copyExecutable(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+installSelfName+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, in); err != nil {
		_ = tmp.Close()
		return err
	}
	if err = tmp.Chmod(0o755); err != nil { // CreateTemp makes 0600
		_ = tmp.Close()
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
