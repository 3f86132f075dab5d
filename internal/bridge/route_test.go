package bridge

import (
	"net/http"
	"testing"
)

// roundTripFunc names which way a request went.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRouteBypassesTheBridge: only a known one-sided upstream's requests
// reach the bridge; a dual-era upstream's, and any while the eras are not
// known, go straight to the direct transport.
func TestRouteBypassesTheBridge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		eras    Eras
		bridged bool
	}{
		{"unknown", Eras{}, false},
		{"dual", Eras{Known: true, Legacy: true, Modern: true}, false},
		{"legacy only", Eras{Known: true, Legacy: true}, true},
		{"modern only", Eras{Known: true, Modern: true}, true},
		{"known, neither", Eras{Known: true}, false},
	}
	for _, tt := range tests {
		var went string
		r := &Route{Eras: func() Eras { return tt.eras },
			Direct:  roundTripFunc(func(*http.Request) (*http.Response, error) { went = "direct"; return nil, nil }),
			Bridged: roundTripFunc(func(*http.Request) (*http.Response, error) { went = "bridged"; return nil, nil })}
		_, _ = r.RoundTrip(&http.Request{})
		if want := map[bool]string{true: "bridged", false: "direct"}[tt.bridged]; went != want {
			t.Errorf("%s: went %s, want %s", tt.name, went, want)
		}
	}
}
