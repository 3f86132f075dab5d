// Command checkstatic exits 0 when every ELF file named on the command line
// is statically linked and 1 otherwise; scripts/check-k8s.sh runs it on the
// binary built the Dockerfile's way.
package main

import (
	"fmt"
	"os"

	"github.com/skills-sidecar/skills-sidecar/internal/inject/staticbin"
)

func main() {
	code := 0
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: checkstatic FILE...")
		os.Exit(2)
	}
	for _, p := range os.Args[1:] {
		if err := staticbin.Check(p); err != nil {
			fmt.Fprintln(os.Stderr, "checkstatic:", err)
			code = 1
			continue
		}
		fmt.Println("static:", p)
	}
	os.Exit(code)
}
