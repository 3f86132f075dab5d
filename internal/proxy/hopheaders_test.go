package proxy

import (
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// FuzzRemoveHopHeaders checks removeHopHeaders against what RFC 9110
// §7.6.1 asks of a proxy, on header blocks built from arbitrary bytes: no
// hop-by-hop header and no header the Connection header names survives,
// and every other header survives with its values untouched.
func FuzzRemoveHopHeaders(f *testing.F) {
	f.Add("keep-alive, X-Hop", "X-Hop", "X-End")
	f.Add(" ,close,,Upgrade ", "upgrade", "Te")
	f.Add("x-a\tx-b", "X-A", "X-B")
	// Not keep-alive nor close (a Kelvin sign, a long s): fields named so,
	// dropped by name like any other option.
	f.Add("\u212aeep-alive", "\u212aeep-alive", "X")
	f.Add("clo\u017fe", "clo\u017fe", "X")
	f.Fuzz(func(t *testing.T, connection, named, other string) {
		h := http.Header{}
		h["Connection"] = []string{connection}
		for _, k := range []string{named, other, "Keep-Alive", "Transfer-Encoding", "Proxy-Authorization"} {
			h[textproto.CanonicalMIMEHeaderKey(k)] = []string{"v-" + k}
		}
		before := h.Clone()
		removeHopHeaders(h)

		listed := map[string]bool{}
		for _, v := range before["Connection"] { // named may have been Connection itself
			for t := range strings.SplitSeq(v, ",") {
				if t = textproto.TrimString(t); t != "" {
					listed[textproto.CanonicalMIMEHeaderKey(t)] = true
				}
			}
		}
		for _, k := range hopHeaders {
			if _, ok := h[k]; ok {
				t.Fatalf("Connection %q: hop-by-hop %s survived", connection, k)
			}
		}
		for k, vv := range before {
			_, kept := h[k]
			dropped := listed[k] || isHopHeader(k)
			if kept == dropped {
				t.Fatalf("Connection %q: %s kept=%v, want kept=%v", connection, k, kept, !dropped)
			}
			if kept && strings.Join(h[k], "\x00") != strings.Join(vv, "\x00") {
				t.Fatalf("%s changed from %q to %q", k, vv, h[k])
			}
		}
	})
}

func isHopHeader(k string) bool {
	for _, h := range hopHeaders {
		if h == k {
			return true
		}
	}
	return false
}

func TestHasToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		values []string
		want   bool
	}{
		{[]string{"trailers"}, true},
		{[]string{"deflate, Trailers"}, true},
		{[]string{"deflate", " trailers ;q=0"}, false}, // a parameter makes it another token
		{[]string{"trailersx"}, false},
		{[]string{"TRAILERS"}, true},
		{[]string{"trailer\u017f"}, false}, // a long s is not "s" (RFC 9110 5.6.2: tokens are ASCII)
		{nil, false},
	}
	for _, tc := range tests {
		if got := httpguts.HeaderValuesContainsToken(tc.values, "trailers"); got != tc.want {
			t.Errorf("HeaderValuesContainsToken(%q, trailers) = %v, want %v", tc.values, got, tc.want)
		}
	}
}
