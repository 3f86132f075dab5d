// Package config owns the sidecar's one Config struct and the single
// precedence that fills it: defaults < pod annotations (a downward API file)
// < environment (SKILLS_SIDECAR_*) < command-line flags.
//
// Every key is declared once, as a struct field with its tags; the flag, the
// environment variable, the annotation and the configuration table in docs/configuration.md
// are all derived from that declaration, so they cannot drift. Unknown keys
// are errors in every source, and Validate reports every problem at once,
// each naming the key the user typed.
//
// The package must not do I/O beyond reading the annotations file it is
// given a path to, nor log.
package config
