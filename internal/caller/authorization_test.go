package caller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestOfAuthorizationAsVerified: a request's caller is the credential the
// upstream verifies, so two requests whose bearer token go-sdk's own
// middleware (auth.RequireBearerToken) reads alike are one caller, and two
// it reads apart are two. A client that holds one valid token must not
// become a new caller, with a share of its own, by sending it again with
// an invented second Authorization line (the middleware reads the first,
// as Header.Get does), or with its scheme in another case or more spaces
// before the token (RFC 9110, 11.1 and 11.4: the scheme is
// case-insensitive, 1*SP separates it from the token; the middleware
// splits on whitespace and folds the scheme's case).
func TestOfAuthorizationAsVerified(t *testing.T) {
	t.Parallel()
	// verified runs go-sdk's middleware on a request carrying values as
	// its Authorization lines and returns the token it verified ("" when
	// it refused the request).
	verified := func(values []string) string {
		var got string
		verifier := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			got = token
			return &auth.TokenInfo{}, nil
		}
		h := auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		r := httptest.NewRequest(http.MethodPost, "http://upstream/mcp", nil)
		r.Header["Authorization"] = values
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			return ""
		}
		return got
	}
	base := []string{"Bearer tok"}
	for _, tc := range []struct {
		name   string
		values []string
	}{
		{"the same line", []string{"Bearer tok"}},
		{"an invented second line", []string{"Bearer tok", "Bearer junk-1"}},
		{"another invented second line", []string{"Bearer tok", "x"}},
		{"the scheme in lower case", []string{"bearer tok"}},
		{"the scheme in upper case", []string{"BEARER tok"}},
		{"two spaces before the token", []string{"Bearer  tok"}},
		{"a tab before the token", []string{"Bearer\ttok"}},
		{"another token", []string{"Bearer tok2"}},
		{"the token in another case", []string{"Bearer TOK"}},
		{"an invented first line", []string{"Bearer junk", "Bearer tok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := verified(base), verified(tc.values)
			if a == "" || b == "" {
				t.Fatalf("go-sdk refused %q or %q: not a pair this test can judge", base, tc.values)
			}
			r1, r2 := req("192.0.2.1:1"), req("192.0.2.1:1")
			r1.Header["Authorization"], r2.Header["Authorization"] = base, tc.values
			want := a == b
			if got := gateOn.Of(r1) == gateOn.Of(r2); got != want {
				t.Errorf("Authorization %q and %q: one caller = %v; go-sdk verifies %q and %q, so want %v", base, tc.values, got, a, b, want)
			}
		})
	}
}

// TestOfCredentialsAllocations: a caller known by its token is named on
// every call the proxy relays, without an allocation when the token fits
// the room HeaderSum hashes in.
func TestOfCredentialsAllocations(t *testing.T) {
	r := req("192.0.2.1:1", "Authorization", "bearer  "+strings.Repeat("t", 600), "Cookie", "a=1")
	if n := testing.AllocsPerRun(100, func() { gateOn.Of(r) }); n != 0 {
		t.Errorf("Of allocates %v times; want 0", n)
	}
}
