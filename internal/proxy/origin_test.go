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
		allowed      []string
		want         bool
	}{
		{"http://localhost:6274", "sidecar:8080", nil, true},
		{"http://127.0.0.1:3000", "sidecar:8080", nil, true},
		{"http://[::1]:3000", "sidecar:8080", nil, true},
		{"https://sidecar:8080", "sidecar:8080", nil, true},
		{"https://evil.example", "sidecar:8080", nil, false},
		{"http://localhost.evil.example", "sidecar:8080", nil, false},
		{"null", "sidecar:8080", nil, false},
		{"file://", "sidecar:8080", nil, false},
		{"https://app.example", "sidecar:8080", []string{"https://app.example"}, true},
		{"https://other.example", "sidecar:8080", []string{"https://app.example"}, false},
		{"https://anything.example", "sidecar:8080", []string{"*"}, true},
	}
	for _, tt := range tests {
		if got := originAllowed(tt.origin, tt.host, tt.allowed); got != tt.want {
			t.Errorf("originAllowed(%q, %q, %q) = %v, want %v", tt.origin, tt.host, tt.allowed, got, tt.want)
		}
	}
}

func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"http://localhost:1", "https://evil.example", "null", "http://[::1]", "http://127.0.0.1.evil"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		if !originAllowed(origin, "sidecar.example:8080", nil) {
			return
		}
		// Allowed with no list: it must name this host or a loopback one.
		u, err := url.Parse(origin)
		if err != nil {
			t.Fatalf("allowed an unparsable origin %q", origin)
		}
		h := u.Hostname()
		ip := net.ParseIP(h)
		if u.Host != "sidecar.example:8080" && !strings.EqualFold(u.Host, "sidecar.example:8080") && h != "localhost" && !strings.EqualFold(h, "localhost") && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("allowed foreign origin %q (host %q)", origin, h)
		}
	})
}
