// Command soak is the sidecar's bounded load run (`make soak`): it builds
// skills-sidecar and demo-upstream, runs them as child processes on
// loopback, and drives the sidecar with concurrent clients mixing
// tools/call, skills/list (following cursors), resources/read of skill
// files and long-lived legacy GET streams, while the plugin folder (a
// ConfigMap-style symlink farm) is swapped several times and the upstream is
// killed and restarted once.
//
//	go run ./test/soak [-duration 60s] [-workers 16] [-json report.json]
//
// It scrapes the sidecar's /metrics every second for goroutines, open file
// descriptors and resident memory, and fails (exit 1) when goroutines or
// descriptors leak once the load has stopped, when any request ends without
// either a result or an error, or when another check in the report fails.
// The report ends with "soak: N passed, N failed".
//
// It owns its temporary folder and the processes it starts, and stops every
// one of them by pid, on failure and on SIGINT or SIGTERM too. It must not
// talk to anything but loopback, nor run unbounded: the load has a fixed
// duration and a request cap.
package main
