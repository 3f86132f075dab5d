// Package wrkstat owns the figures of scripts/bench-wrk.sh: it parses the
// records the script writes for every measured round (wrk's counts, the
// CPU, system calls and context switches each hop process spent from
// /proc, the sidecar's
// allocation counter), the summary `strace -c` prints and the lines `go test
// -bench -benchmem` prints, and renders the medians, their spread, the
// ratios to nginx and the table of forwarding-cost targets
// (docs/performance.md) as Markdown.
//
// It is pure: it reads the bytes it is given and writes to the writer it is
// given. It must not start processes, read /proc or the clock, and it never
// fails a run because a target is missed: verdicts are printed, not
// asserted.
package wrkstat
