package proxy

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

func TestOriginAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		origin, host string
		vouched      bool
		allowed      []string
		want         bool
	}{
		{"http://localhost:6274", "sidecar:8080", false, nil, true},
		{"http://127.0.0.1:3000", "sidecar:8080", false, nil, true},
		{"http://[::1]:3000", "sidecar:8080", false, nil, true},
		{"https://sidecar:8080", "sidecar:8080", true, nil, true},
		// The rebinding page: Origin equal to a Host nobody vouched for.
		{"http://evil.example", "evil.example", false, nil, false},
		{"https://sidecar:8080", "sidecar:8080", false, nil, false},
		{"https://evil.example", "sidecar:8080", true, nil, false},
		{"http://localhost.evil.example", "sidecar:8080", false, nil, false},
		{"http://127.0.0.1.evil.example", "sidecar:8080", false, nil, false},
		{"null", "sidecar:8080", false, nil, false},
		{"file://", "sidecar:8080", false, nil, false},
		{"https://app.example", "sidecar:8080", false, []string{"https://app.example"}, true},
		{"https://other.example", "sidecar:8080", false, []string{"https://app.example"}, false},
		{"https://anything.example", "sidecar:8080", false, []string{"*"}, true},
	}
	for _, tt := range tests {
		if got := originAllowed(tt.origin, tt.host, tt.vouched, tt.allowed); got != tt.want {
			t.Errorf("originAllowed(%q, %q, %v, %q) = %v, want %v", tt.origin, tt.host, tt.vouched, tt.allowed, got, tt.want)
		}
	}
}

func TestHostAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host     string
		loopback bool
		allowed  []string
		want     bool
	}{
		{"localhost", true, nil, true},
		{"localhost:8080", true, nil, true},
		{"LOCALHOST:8080", true, nil, true},
		{"127.0.0.1:8080", true, nil, true},
		{"127.8.9.10", true, nil, true},
		{"[::1]:8080", true, nil, true},
		{"[::1]", true, nil, true},
		{"evil.example", true, nil, false},
		{"evil.example:8080", true, nil, false},
		{"localhost.evil.example", true, nil, false},
		{"127.0.0.1.evil.example", true, nil, false},
		{"10.0.0.1:8080", true, nil, false},
		{"", true, nil, false},
		{"mcp.example:8080", true, []string{"mcp.example"}, true},
		{"mcp.example:8080", true, []string{"mcp.example:8080"}, true},
		{"mcp.example:9999", true, []string{"mcp.example:8080"}, false},
		{"anything", true, []string{"*"}, true},
		// A pod's listener: Service names pass while the list is empty.
		{"my-svc.ns.svc:8080", false, nil, true},
		{"evil.example", false, nil, true},
		{"evil.example", false, []string{"my-svc.ns.svc"}, false},
		{"my-svc.ns.svc:8080", false, []string{"my-svc.ns.svc"}, true},
		{"localhost:8080", false, []string{"my-svc.ns.svc"}, true},
	}
	for _, tt := range tests {
		if got := hostAllowed(tt.host, tt.loopback, tt.allowed); got != tt.want {
			t.Errorf("hostAllowed(%q, %v, %q) = %v, want %v", tt.host, tt.loopback, tt.allowed, got, tt.want)
		}
	}
}

func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"http://localhost:1", "https://evil.example", "null", "http://[::1]", "http://127.0.0.1.evil", "http://sidecar.example:8080"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		if !originAllowed(origin, "sidecar.example:8080", true, nil) {
			if originAllowed(origin, "sidecar.example:8080", false, nil) {
				t.Fatalf("%q allowed for a host nobody vouched for but not for a vouched one", origin)
			}
			return
		}
		// Allowed with no list: it must name this host or a loopback one.
		u, err := url.Parse(origin)
		if err != nil {
			t.Fatalf("allowed an unparsable origin %q", origin)
		}
		h := u.Hostname()
		ip := net.ParseIP(h)
		if !strings.EqualFold(u.Host, "sidecar.example:8080") && !strings.EqualFold(h, "localhost") && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("allowed foreign origin %q (host %q)", origin, h)
		}
		// Not vouched for, the request's own host is not enough.
		if strings.EqualFold(u.Host, "sidecar.example:8080") && originAllowed(origin, "sidecar.example:8080", false, nil) {
			t.Fatalf("allowed %q on a Host nobody vouched for", origin)
		}
	})
}

// FuzzHostAllowed: on a loopback listener with no list, only Hosts that
// name this machine pass.
func FuzzHostAllowed(f *testing.F) {
	for _, s := range []string{"localhost", "127.0.0.1:80", "[::1]:1", "evil.example", "localhost.evil", "127.0.0.1.nip.io", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !hostAllowed(host, true, nil) {
			return
		}
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		}
		name = strings.Trim(name, "[]")
		ip := net.ParseIP(name)
		if !strings.EqualFold(name, "localhost") && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("hostAllowed(%q) on loopback = true", host)
		}
	})
}
