// Command checkmanifests decodes every Kubernetes manifest on stdin (a
// multi-document YAML stream, e.g. helm template or kustomize build output)
// strictly into its k8s.io/api type and prints one line per object; any
// unknown kind or field fails with exit status 1, as does a probe or
// lifecycle handler that names a host (manifestcheck.ProbeHosts). With -rules FILE it also
// writes the groups of every PrometheusRule as a Prometheus rule file, for
// `promtool check rules`. scripts/check-k8s.sh runs it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/skills-sidecar/skills-sidecar/internal/inject/manifestcheck"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("checkmanifests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rules := fs.String("rules", "", "write the PrometheusRule groups to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
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
	if errs := manifestcheck.ProbeHosts(objs); len(errs) > 0 {
		fmt.Fprintf(stderr, "checkmanifests:\n%v\n", errors.Join(errs...))
		return 1
	}
	var groups []any
	for _, o := range objs {
		fmt.Fprintf(stdout, "ok %s %s %s\n", o.APIVersion, o.Kind, o.Name)
		if pr, ok := o.Value.(*manifestcheck.PrometheusRule); ok {
			for _, g := range pr.Spec.Groups {
				groups = append(groups, g)
			}
		}
	}
	if *rules != "" {
		b, err := yaml.Marshal(map[string]any{"groups": groups})
		if err == nil {
			err = os.WriteFile(*rules, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "checkmanifests: write rules: %v\n", err)
			return 1
		}
	}
	return 0
}
