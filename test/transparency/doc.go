// Command transparency compares the official conformance suite's results
// for one upstream run directly and the same upstream run through the
// sidecar, check by check (scripts/e2e-transparency.sh drives it).
//
//	go run ./test/transparency -allow test/e2e/transparency-allow.txt ROOT
//
// ROOT holds UPSTREAM/CONFIG/{direct,sidecar}/server-SCENARIO-TIMESTAMP/checks.json,
// the layout `conformance server -o DIR` writes for each side. Every check
// whose status differs between the two sides, or whose message differs once
// hosts, ports, UUIDs and timestamps are masked, is a difference; a
// difference fails unless a rule of the allow file covers it, and every rule
// carries its reason. It prints the table of differences and
// "transparency: N passed, N failed" counting checks, and exits 1 when any
// check failed, 2 on a usage or read error.
//
// The comparison (Compare, Normalize, ParseAllow) is pure: values in, rows
// out; reading the folders and printing sit in main.go. It must not start
// servers or talk to the network: the script owns the processes.
package main
