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
	_, port, _ := net.SplitHostPort(freeAddr(t))
	_, mport, _ := net.SplitHostPort(freeAddr(t))
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", ":" + port, "--metrics-listen", ":" + mport, "--annotations-file", ""}, nil, nil, &out, &errOut)
	}()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo never listened on 127.0.0.1:%s; stderr %s", port, errOut.String())
		}
	}
	for _, p := range []string{port, mport} {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(other.String(), p), time.Second); err == nil {
			c.Close()
			t.Errorf("the demo answers on %s:%s, want loopback only", other, p)
		}
	}
}
