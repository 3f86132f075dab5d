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
		// A zone (RFC 4007) names an interface, not another machine; go-sdk
		// accepts a zoned loopback too. A zone makes no other address local.
		{"[::1%lo]:8080", true, nil, true},
		{"[fe80::1%lo]:8080", true, nil, false},
		{"127.0.0.1%lo", true, nil, false},
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
	for _, s := range []string{"http://localhost:1", "https://evil.example", "null", "http://[::1]", "http://127.0.0.1.evil", "http://sidecar.example:8080",
		"http://[::1%25lo]:1", "http://[fe80::1%25lo]"} {
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
		if !strings.EqualFold(u.Host, "sidecar.example:8080") && !namesThisMachine(h) {
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
	for _, s := range []string{"localhost", "127.0.0.1:80", "[::1]:1", "evil.example", "localhost.evil", "127.0.0.1.nip.io", "",
		"::1%0", "[::1%lo]:1", "[fe80::1%lo]:1", "127.0.0.1%0"} {
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
		if !namesThisMachine(strings.Trim(name, "[]")) {
			t.Fatalf("hostAllowed(%q) on loopback = true", host)
		}
	})
}

// namesThisMachine is the fuzz targets' judgement of a host name, written
// apart from loopbackHost: localhost, or a loopback address (127.0.0.0/8,
// ::1, ::ffff:127.0.0.0/104). An IPv6 address may carry a zone (RFC 4007,
// section 11: "%" and a non-empty interface name); the address still names
// this machine, and go-sdk's own check, by netip's parser, accepts it.
func namesThisMachine(name string) bool {
	if strings.EqualFold(name, "localhost") {
		return true
	}
	if addr, zone, zoned := strings.Cut(name, "%"); zoned {
		if zone == "" || !strings.Contains(addr, ":") {
			return false
		}
		name = addr
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}
