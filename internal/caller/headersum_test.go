package caller

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
)

// TestHeaderSum holds HeaderSum to its definition, written out here byte
// by byte: every session id the sidecar minted is sealed over this hash of
// its caller's credentials, so a change of a single byte ends them all on
// an upgrade.
func TestHeaderSum(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 3*headerSumRoom) // past the room on the stack
	h := http.Header{
		"Authorization":   {"Bearer " + long},
		"Cookie":          {"a=1", "b=2"},
		"X-Forwarded-For": {"192.0.2.1"},
	}
	tests := []struct {
		name  string
		names [][]string
		text  string // what is hashed
		any   bool
	}{
		{"none named", nil, "", false},
		{"named, absent", [][]string{{"X-Api-Key"}}, "", false},
		{"one value", [][]string{{"X-Forwarded-For"}}, "X-Forwarded-For\x00192.0.2.1\x00", true},
		{"values in order, names canonical", [][]string{{"cookie", "x-forwarded-for"}},
			"Cookie\x00a=1\x00Cookie\x00b=2\x00X-Forwarded-For\x00192.0.2.1\x00", true},
		{"lists in order", [][]string{{"X-Forwarded-For"}, {"Cookie"}},
			"X-Forwarded-For\x00192.0.2.1\x00Cookie\x00a=1\x00Cookie\x00b=2\x00", true},
		{"a value past the room", [][]string{{"Authorization", "X-Api-Key"}},
			"Authorization\x00Bearer " + long + "\x00", true},
	}
	for _, tc := range tests {
		sum, any := HeaderSum(h, tc.names...)
		if sum != sha256.Sum256([]byte(tc.text)) || any != tc.any {
			t.Errorf("%s: HeaderSum = %x, %v; want the SHA-256 of %q, %v", tc.name, sum, any, tc.text, tc.any)
		}
	}
}

// TestHeaderSumAllocations: a caller's credentials are hashed on every
// request of a sealed session, without an allocation when they fit the
// room.
func TestHeaderSumAllocations(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer " + strings.Repeat("t", 600)}, "Cookie": {"a=1"}}
	names := []string{"Authorization", "Cookie"}
	if n := testing.AllocsPerRun(100, func() { HeaderSum(h, names) }); n != 0 {
		t.Errorf("HeaderSum allocates %v times; want 0", n)
	}
}
