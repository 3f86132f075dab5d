// Package flagargs owns how the subcommands read a command line: flags may
// come before or after the positional arguments (`lint DIR --format json`),
// which the flag package alone stops parsing at, and "--" ends the flags.
// It parses only: it must not print, exit or define a flag; the callers own
// their flags, messages and exit codes.
package flagargs

import "flag"

// Parse parses args with fset, letting flags follow positional arguments,
// and returns the positional arguments in order. Everything after a "--"
// is positional, as the flag package's convention has it. An error is
// fset.Parse's, after fset has reported it to its output.
func Parse(fset *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fset.Parse(args); err != nil {
			return nil, err
		}
		rest := fset.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
