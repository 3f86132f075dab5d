// Command checkmanifests decodes every Kubernetes manifest on stdin (a
// multi-document YAML stream, e.g. helm template or kustomize build output)
// strictly into its k8s.io/api type and prints one line per object; any
// unknown kind or field fails with exit status 1. scripts/check-k8s.sh runs
// it.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/skills-sidecar/skills-sidecar/internal/inject/manifestcheck"
)

func main() { os.Exit(run(os.Stdin, os.Stdout, os.Stderr)) }

func run(stdin io.Reader, stdout, stderr io.Writer) int {
	in, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "checkmanifests: %v\n", err)
		return 1
	}
	objs, err := manifestcheck.Decode(in)
	if err != nil {
		fmt.Fprintf(stderr, "checkmanifests:\n%v\n", err)
		return 1
	}
	if len(objs) == 0 {
		fmt.Fprintln(stderr, "checkmanifests: no objects")
		return 1
	}
	for _, o := range objs {
		fmt.Fprintf(stdout, "ok %s %s %s\n", o.APIVersion, o.Kind, o.Name)
	}
	return 0
}
