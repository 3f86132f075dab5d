package wire

import (
	"mime"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeaderValue(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, enc string }{
		{"list_rates", "list_rates"},
		{"skill://acme/billing/SKILL.md", "skill://acme/billing/SKILL.md"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{"skill://café/SKILL.md", "=?base64?c2tpbGw6Ly9jYWbDqS9TS0lMTC5tZA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"two words", "=?base64?dHdvIHdvcmRz?="},
		{"", "=?base64??="},
		{"=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
	}
	for _, tt := range tests {
		if got := EncodeHeaderValue(tt.in); got != tt.enc {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.in, got, tt.enc)
		}
		if got, ok := DecodeHeaderValue(tt.enc); !ok || got != tt.in {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v, want %q", tt.enc, got, ok, tt.in)
		}
	}
	for _, bad := range []string{"=?base64?%%%?=", "=?base64?/w==?=", "=?base64?SGk?=", "=?base64?SGl=?="} {
		if got, ok := DecodeHeaderValue(bad); ok {
			t.Errorf("DecodeHeaderValue(%q) = %q, true, want false (not canonical base64 of UTF-8)", bad, got)
		}
	}
}

func TestCheckHeaders(t *testing.T) {
	t.Parallel()
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	read := `{"uri":"skill://café/SKILL.md"}`
	tests := []struct {
		name          string
		h             http.Header
		method, param string
		wantHeader    string // "" when the headers agree
	}{
		{"agree", h(HeaderProtocolVersion, ModernVersion, HeaderMethod, "tools/list"), "tools/list", `{}`, ""},
		{"version absent", h(HeaderMethod, "tools/list"), "tools/list", `{}`, "MCP-Protocol-Version"},
		{"method absent", h(HeaderProtocolVersion, ModernVersion), "tools/list", `{}`, HeaderMethod},
		{"method differs", h(HeaderProtocolVersion, ModernVersion, HeaderMethod, "tools/call"), "tools/list", `{}`, HeaderMethod},
		{"name base64", h(HeaderProtocolVersion, ModernVersion, HeaderMethod, "resources/read", HeaderName, EncodeHeaderValue("skill://café/SKILL.md")), "resources/read", read, ""},
		{"name raw non-ASCII", h(HeaderProtocolVersion, ModernVersion, HeaderMethod, "resources/read", HeaderName, "skill://café/SKILL.md"), "resources/read", read, ""},
		{"name absent with a target", h(HeaderProtocolVersion, ModernVersion, HeaderMethod, "resources/read"), "resources/read", read, HeaderName},
		{"name differs", h(HeaderProtocolVersion, ModernVersion, HeaderMethod, "tools/call", HeaderName, "b"), "tools/call", `{"name":"a"}`, HeaderName},
		{"name absent without a target", h(HeaderProtocolVersion, ModernVersion, HeaderMethod, "tools/call"), "tools/call", `{}`, ""},
	}
	for _, tt := range tests {
		got := CheckHeaders(tt.h, tt.method, []byte(tt.param), ModernVersion)
		if (tt.wantHeader == "") != (got == "") || !strings.HasPrefix(got, tt.wantHeader) {
			t.Errorf("%s: CheckHeaders = %q, want a message about %q", tt.name, got, tt.wantHeader)
		}
	}
}

func TestClaimsModern(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		h      http.Header
		params string
		want   bool
	}{
		{http.Header{}, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, true},
		{http.Header{}, `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, true},
		{http.Header{HeaderProtocolVersion: {"2026-07-28"}}, `{}`, true},
		{http.Header{HeaderProtocolVersion: {"2025-11-25"}}, `{"_meta":{"progressToken":1}}`, false},
		{http.Header{}, ``, false},
	} {
		if got := ClaimsModern(tt.h, []byte(tt.params)); got != tt.want {
			t.Errorf("ClaimsModern(%v, %s) = %v, want %v", tt.h, tt.params, got, tt.want)
		}
	}
}

// FuzzHeaderValue: decoding never panics and changes only a value in the
// sentinel form; every string round-trips through Encode, which writes
// visible ASCII only.
func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{"list_rates", "Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?=", "=?base64?%%%?=", "=?base64??=", "", " ", "=?base64?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// A sender may use the sentinel form for any value: decoding
		// changes only a value in that form, into valid UTF-8.
		if v, ok := DecodeHeaderValue(s); ok && v != s && (!strings.HasPrefix(s, base64Prefix) || !utf8.ValidString(v)) {
			t.Errorf("DecodeHeaderValue(%q) = %q", s, v)
		}
		if !utf8.ValidString(s) {
			return
		}
		enc := EncodeHeaderValue(s)
		for i := 0; i < len(enc); i++ {
			if enc[i] < '!' || enc[i] > '~' {
				t.Fatalf("EncodeHeaderValue(%q) = %q: byte %#x is not visible ASCII", s, enc, enc[i])
			}
		}
		if got, ok := DecodeHeaderValue(enc); !ok || got != s {
			t.Errorf("DecodeHeaderValue(EncodeHeaderValue(%q)) = %q, %v", s, got, ok)
		}
	})
}

// MediaType says what mime.ParseMediaType says of a Content-Type: the
// media type and whether it failed.
func TestMediaTypeIsMimes(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{
		"application/json", "text/event-stream", "", "Application/JSON", "application/json; charset=utf-8",
		"text/event-stream;charset=utf-8", "application/json; charset", "application/json ", " application/json",
		"text/html", "no-slash", "application/json;;", "a/b; x=\"unterminated",
	} {
		want, _, werr := mime.ParseMediaType(ct)
		got, err := MediaType(ct)
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("MediaType(%q) = %q, %v; mime says %q, %v", ct, got, err, want, werr)
		}
	}
}
