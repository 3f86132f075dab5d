// Package harness owns the benchmark harness behind cmd/skillsbench: the
// go-sdk upstream it measures against, the bare reverse proxy baseline, the
// minimal relays scripts/bench-wrk.sh measures as floors (loopproxy, and
// floorproxy with its own HTTP/1.1 framing, pure functions over bytes), the
// nginx, supergateway and sidecar processes it starts, the load generator
// and the scenarios listed in docs/performance.md.
//
// Everything it starts listens on 127.0.0.1 only and is stopped by the pid
// it was started with. It talks to the sidecar only through its command-line
// contract (`skills-sidecar serve --listen --upstream --plugin-dir`, or
// `-- CMD` for a stdio upstream) and the
// wire, never by importing it, so it can measure any build of the binary.
// It never asserts numbers; it measures and hands rows to package report.
package harness
