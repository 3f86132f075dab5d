package onbehalf_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"reflect"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
)

// TestSetForwardedAsHTTPUtil: SetForwarded sets what httputil's
// ProxyRequest.SetXForwarded sets for the same inbound request, and each
// header it sets is a value of its own: adding to one (as a transport
// below may) leaves the others as they were.
func TestSetForwardedAsHTTPUtil(t *testing.T) {
	for _, c := range []struct {
		name   string
		remote string
		prior  []string
		tls    bool
	}{
		{"plain", "10.0.0.7:5555", nil, false},
		{"behind another proxy", "10.0.0.7:5555", []string{"192.0.2.1", "192.0.2.2, 192.0.2.3"}, false},
		{"tls", "[2001:db8::1]:443", nil, true},
		{"not host:port", "@unix", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := httptest.NewRequest(http.MethodPost, "http://sidecar.example:8080/mcp", nil)
			in.RemoteAddr = c.remote
			if c.prior != nil {
				in.Header["X-Forwarded-For"] = c.prior
			}
			if c.tls {
				in.TLS = &tls.ConnectionState{}
			}
			in.Header.Set("Forwarded", "for=192.0.2.9")

			pr := &httputil.ProxyRequest{In: in, Out: in.Clone(in.Context())}
			pr.Out.Header.Del("Forwarded") // httputil drops it when it rewrites
			pr.SetXForwarded()

			got := in.Clone(in.Context()).Header
			onbehalf.SetForwarded(got, in)
			if !reflect.DeepEqual(got, pr.Out.Header) {
				t.Errorf("SetForwarded: %v\nhttputil:     %v", got, pr.Out.Header)
			}

			got.Add("X-Forwarded-For", "a")
			got.Add("X-Forwarded-Host", "b")
			for k, want := range map[string][]string{
				"X-Forwarded-Host":  {in.Host, "b"},
				"X-Forwarded-Proto": pr.Out.Header["X-Forwarded-Proto"],
			} {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("after adding to its neighbours, %s is %q, want %q", k, got[k], want)
				}
			}
		})
	}
}
