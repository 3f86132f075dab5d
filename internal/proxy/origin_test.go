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
		// Host names compare in ASCII: a long s is not an "s".
		{"http://localho\u017ft", "sidecar:8080", false, nil, false},
		{"https://\u017fidecar:8080", "sidecar:8080", true, nil, false},
		{"https://app.example", "sidecar:8080", false, []string{"https://APP.example"}, true},
		{"https://app.example", "sidecar:8080", false, []string{"http\u017f://app.example"}, false},
		// A stray bracket makes no IP literal (RFC 3986 3.2.2): these name
		// no host of this machine.
		{"http://localhost]", "sidecar:8080", false, nil, false},
		{"http://]localhost", "sidecar:8080", false, nil, false},
		{"http://]]]127.0.0.0", "sidecar:8080", false, nil, false},
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
		// localhost is ASCII, in any case (RFC 4343); go-sdk takes it only
		// exactly so, and a long s (U+017F) or a Kelvin sign (U+212A) is
		// no letter of it.
		{"LocalHost", true, nil, true},
		{"localho\u017ft", true, nil, false},
		{"localho\u017ft:8080", true, nil, false},
		{"[localho\u017ft]:8080", true, nil, false},
		// Brackets come off as a pair around the whole name, never one
		// alone: "localhost]" or "]]]127.0.0.1" is no loopback name.
		{"localhost]", true, nil, false},
		{"[localhost", true, nil, false},
		{"]]]127.0.0.1", true, nil, false},
		{"127.0.0.1]", true, nil, false},
		{"[[::1]]", true, nil, false},
		{"[::1]]", true, nil, false},
		// A pair around a name is taken off as net.SplitHostPort takes it
		// off "[localhost]:8080", and as go-sdk does.
		{"[localhost]", true, nil, true},
		{"[localhost]:8080", true, nil, true},
		{"ma\u212ae.example:8080", true, []string{"make.example"}, false},
		{"MAKE.example:8080", true, []string{"make.example"}, true},
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
		"http://[::1%25lo]:1", "http://[fe80::1%25lo]",
		// Found by a review of the fuzz targets: stray brackets, a long s.
		"http://localhost]", "http://]localhost", "http://]]]127.0.0.0", "http://[::1%25a]", "http://localho\u017ft"} {
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
		"::1%0", "[::1%lo]:1", "[fe80::1%lo]:1", "127.0.0.1%0",
		"localhost]", "]]]127.0.0.1", "[localhost]", "localho\u017ft", "[::1%a]:1", "::1%a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !hostAllowed(host, true, nil) {
			return
		}
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		} else if inner, ok := strings.CutPrefix(host, "["); ok {
			// An IP literal's brackets, a pair around the whole: a lone
			// one stays, and no name holding one is this machine's.
			if inner, ok = strings.CutSuffix(inner, "]"); ok {
				name = inner
			}
		}
		if !namesThisMachine(name) {
			t.Fatalf("hostAllowed(%q) on loopback = true", host)
		}
	})
}

// namesThisMachine is the fuzz targets' judgement of a host name, written
// apart from loopbackHost: localhost, or a loopback address (127.0.0.0/8,
// ::1, ::ffff:127.0.0.0/104). An IPv6 address may carry a zone (RFC 4007,
// section 11: "%" and a non-empty interface name); the address still names
// this machine, and go-sdk's own check, by netip's parser, accepts it.
//
// localhost is compared in ASCII (RFC 9110 5.6.2 and RFC 4343; go-sdk
// takes it exactly): a name holding any other byte is not it, whatever
// Unicode folds it to.
func namesThisMachine(name string) bool {
	if strings.IndexFunc(name, func(r rune) bool { return r >= 0x80 }) < 0 && strings.ToLower(name) == "localhost" {
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
