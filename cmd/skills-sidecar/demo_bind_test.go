package main

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestLoopbackUnlessHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		":8080":          "127.0.0.1:8080",
		":0":             "127.0.0.1:0",
		"0.0.0.0:8080":   "0.0.0.0:8080",
		"10.1.2.3:9090":  "10.1.2.3:9090",
		"[::]:8080":      "[::]:8080",
		"localhost:8080": "localhost:8080",
		"":               "",
	} {
		if got := loopbackUnlessHost(in); got != want {
			t.Errorf("loopbackUnlessHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDemoListensOnLoopbackOnly: the embedded demo, given listen and
// metrics addresses without a host (the defaults' shape), is reachable on
// 127.0.0.1 and not on the machine's other addresses. Before, it printed
// 127.0.0.1 and listened on every interface.
func TestDemoListensOnLoopbackOnly(t *testing.T) {
	var other net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			other = n.IP
			break
		}
	}
	if other == nil {
		t.Skip("no non-loopback IPv4 address on this machine to try")
	}
	// The ports are picked, closed and handed over; the demo upstream,
	// which binds an ephemeral port first, may take one of them: then the
	// run fails at once and is tried again with others.
	var port, mport string
	var stop func()
	for attempt := 0; stop == nil; attempt++ {
		if attempt == 5 {
			t.Fatal("no free pair of ports in 5 attempts")
		}
		_, port, _ = net.SplitHostPort(freeAddr(t))
		_, mport, _ = net.SplitHostPort(freeAddr(t))
		stop = startDemo(t, port, mport)
	}
	defer stop()
	for _, p := range []string{port, mport} {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(other.String(), p), time.Second); err == nil {
			c.Close()
			t.Errorf("the demo answers on %s:%s, want loopback only", other, p)
		}
	}
}

// startDemo runs the demo with listen :port and metrics :mport and returns
// its stop function once it answers on 127.0.0.1:port, or nil when it
// exited first (a port taken). It is not startRun, which listens on the
// addresses it picks, with a host, and fails the test when run exits
// early: here the addresses have no host, and an early exit is a retry.
func startDemo(t *testing.T, port, mport string) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", ":" + port, "--metrics-listen", ":" + mport, "--annotations-file", ""}, nil, nil, &out, &errOut)
	}()
	t.Cleanup(cancel)
	exited := false
	waitFor(t, "the demo to listen on 127.0.0.1:"+port+" or exit", func() bool {
		select {
		case <-done:
			exited = true
			return true
		default:
		}
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, func() string { return "stderr " + errOut.String() })
	if exited {
		cancel()
		return nil
	}
	return func() { cancel(); <-done }
}
