package config

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultsAreValid(t *testing.T) {
	t.Parallel()
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("Defaults().Validate() = %v, want nil", err)
	}
	if c.Listen != ":17080" || c.MetricsListen != ":17090" || c.UpstreamTimeout != 60*time.Second || c.MaxBodyBytes != 4<<20 {
		t.Errorf("Defaults() = %+v, want listen :17080, metrics-listen :17090, upstream-timeout 60s, max-body-bytes 4 MiB", c)
	}
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	src := Sources{
		Annotations: []byte(`skills-sidecar.io/listen=":1111"
skills-sidecar.io/upstream="http://a:1/mcp"
skills-sidecar.io/log-level="debug"
skills-sidecar.io/inject="true"
other.io/thing="ignored"
`),
		Environ: []string{"SKILLS_SIDECAR_LISTEN=:2222", "SKILLS_SIDECAR_UPSTREAM=http://b:2/mcp", "PATH=/bin"},
		Args:    []string{"--listen", "127.0.0.1:3333", "extra"},
	}
	c, rest, err := Load(src)
	if err != nil {
		t.Fatalf("Load = %v", err)
	}
	got := [4]string{c.Listen, c.Upstream, c.LogLevel, strings.Join(rest, ",")}
	want := [4]string{"127.0.0.1:3333", "http://b:2/mcp", "debug", "extra"}
	if got != want {
		t.Errorf("Load: (listen, upstream, log-level, rest) = %q, want %q", got, want)
	}
}

func TestLoadRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  Sources
		want []string // substrings each naming the key
	}{
		{"unknown flag", Sources{Args: []string{"--no-such-flag=1"}}, []string{"no-such-flag"}},
		{"bad duration flag", Sources{Args: []string{"--drain-timeout", "soon"}}, []string{"drain-timeout", `"soon"`}},
		{"unknown env", Sources{Environ: []string{"SKILLS_SIDECAR_LISTN=:1"}}, []string{"SKILLS_SIDECAR_LISTN"}},
		{"bad env int", Sources{Environ: []string{"SKILLS_SIDECAR_MAX_BODY_BYTES=big"}}, []string{"SKILLS_SIDECAR_MAX_BODY_BYTES"}},
		{"unknown annotation", Sources{Annotations: []byte(`skills-sidecar.io/lissen=":1"`)}, []string{"skills-sidecar.io/lissen"}},
		{"bad annotation line", Sources{Annotations: []byte("garbage")}, []string{"line 1"}},
		{"invalid values reported together", Sources{Args: []string{"--listen", "nocolon", "--upstream", "ftp://x/", "--log-level", "loud"}},
			[]string{"listen:", "upstream:", "log-level:"}},
		{"upstream without host", Sources{Args: []string{"--upstream", "http:///mcp"}}, []string{"upstream:", "no host"}},
		{"upstream command not JSON", Sources{Args: []string{"--upstream-command", "npx server"}}, []string{"upstream-command:", "JSON array"}},
		{"upstream command empty", Sources{Args: []string{"--upstream-command", "[]"}}, []string{"upstream-command:", "no program"}},
		{"upstream command and URL", Sources{Args: []string{"--upstream-command", `["srv"]`, "--upstream", "http://a/mcp"}}, []string{"upstream-command:", "together"}},
		{"host-compat", Sources{Args: []string{"--host-compat", "prompts,resources", "--host-compat-prefix", "a.b"}}, []string{"host-compat:", `"resources"`, "host-compat-prefix:"}},
		{"negative limits", Sources{Args: []string{"--max-body-bytes", "0", "--max-event-bytes", "-1"}}, []string{"max-body-bytes", "max-event-bytes"}},
		{"portability mode", Sources{Environ: []string{"SKILLS_SIDECAR_FRONTMATTER_PORTABILITY=serve"}}, []string{"frontmatter-portability:", `"serve"`}},
		// Log values take any ASCII case; a long s (U+017F), which Unicode
		// case folding takes for "s", is not an s.
		{"log format folded outside ASCII", Sources{Args: []string{"--log-format", "con\u017fole"}}, []string{"log-format:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Load(tt.src)
			if err == nil {
				t.Fatalf("Load(%+v) = nil error, want one naming %q", tt.src, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	_, _, err := Load(Sources{Args: []string{"-h"}, Usage: &out})
	if !errors.Is(err, ErrHelp) {
		t.Fatalf("Load(-h) = %v, want ErrHelp", err)
	}
	if !strings.Contains(out.String(), "-upstream") {
		t.Errorf("usage = %q, want it to list -upstream", out.String())
	}
}

func TestParseAnnotations(t *testing.T) {
	t.Parallel()
	got, err := ParseAnnotations([]byte("a=\"1\"\n\nb=\"two \\\"quoted\\\"\\nline\"\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": "two \"quoted\"\nline"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseAnnotations mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"a=1", "=\"x\"", "a=\"1\"\na=\"2\"", "a=\"unterminated"} {
		if _, err := ParseAnnotations([]byte(bad)); err == nil {
			t.Errorf("ParseAnnotations(%q) = nil error, want one", bad)
		}
	}
}

func TestTableListsEveryKey(t *testing.T) {
	t.Parallel()
	table := Table()
	for _, f := range fields() {
		if f.key == "" || f.help == "" {
			t.Errorf("field %d has no key or help tag", f.index)
		}
		for _, w := range []string{"`--" + f.key + "`", EnvName(f.key), AnnotationPrefix + f.key} {
			if !strings.Contains(table, w) {
				t.Errorf("Table() lacks %q", w)
			}
		}
	}
}

func FuzzParseAnnotations(f *testing.F) {
	for _, s := range []string{"a=\"1\"\n", "k=\"\\u00e9\"", "x", "a=\"1\"\na=\"1\"", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseAnnotations(b)
		if err != nil {
			return
		}
		for k := range m {
			if k == "" || strings.ContainsAny(k, "\n") {
				t.Fatalf("ParseAnnotations(%q) produced key %q", b, k)
			}
		}
	})
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/mcp"},
		{"http://user:pw@127.0.0.1:3000/mcp", "http://127.0.0.1:3000/mcp"},
		{"https://host/mcp?token=abc&x=1", "https://host/mcp?REDACTED"},
		{"http://u@host/p#frag", "http://host/p#REDACTED"},
		{"http://host/a%2Fb", "http://host/a%2Fb"},
		{"mailto:someone@example.com", "mailto:REDACTED"},
		{"http://host:bad port/", "REDACTED"},
	} {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// samePath reports whether the output g has the input u's path, decoded
// and as escaped. Without a scheme or host, a path whose first segment
// holds a colon is written after "./" (RFC 3986 4.2), a dot segment that
// names the same path (5.2.4).
func samePath(g, u *url.URL) bool {
	gp, gep := g.Path, g.EscapedPath()
	if g.Scheme == "" && g.Host == "" && gp != u.Path && strings.HasPrefix(gp, "./") {
		if first, _, _ := strings.Cut(u.Path, "/"); strings.Contains(first, ":") {
			gp, gep = gp[2:], strings.TrimPrefix(gep, "./")
		}
	}
	return gp == u.Path && gep == u.EscapedPath()
}

// FuzzRedactURL: whatever the input, the output parses (RFC 3986, as
// net/url reads it) to the input's scheme, host and path and nothing
// else of it: no userinfo, and a query or fragment only where the input
// had one, holding nothing but REDACTED. A password or a query's value
// can then appear in the output only as part of the scheme, host or path
// it shares with the input, which no search of the output for the
// secret can tell apart: the output's parts are compared instead.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"http://u:pw@h/p?q=1", "https://h", "x:y", "//u:p@h?a=b#c", "http://[::1]:80/?",
		"http://u:http@h/", "http://u:REDA@h/?q", "http://u:pw@h/pw?pw#pw", "mailto:u:pw@h?q#f", "http://u@/p#", "%3A ", "//@//", "//@//x?q", "//u:p@//x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := RedactURL(raw)
		u, err := url.Parse(raw)
		if err != nil {
			if got != "REDACTED" {
				t.Fatalf("RedactURL(%q) = %q for an unparsable URL", raw, got)
			}
			return
		}
		// Without a scheme, a path that begins with "//" after an empty
		// authority ("//@//x") has no spelling without that authority:
		// "//x" reads as host x (RFC 3986 3.3), and net/url reads "////x"
		// as a path. Such an output is read after an authority of its own.
		before, scheme, host := "", u.Scheme, u.Host
		if u.Scheme == "" && u.Host == "" && strings.HasPrefix(u.Path, "//") {
			before, scheme, host = "http://h", "http", "h"
		}
		g, err := url.Parse(before + got)
		if err != nil {
			t.Fatalf("RedactURL(%q) = %q, which does not parse: %v", raw, got, err)
		}
		if g.User != nil {
			t.Fatalf("RedactURL(%q) = %q keeps user info %q", raw, got, g.User)
		}
		if g.Scheme != scheme {
			t.Fatalf("RedactURL(%q) = %q: scheme %q, want %q", raw, got, g.Scheme, scheme)
		}
		opaque := u.Opaque != "" // mailto:…: all after the scheme is redacted
		if opaque {
			if g.Opaque != "REDACTED" || g.Host != "" || g.Path != "" {
				t.Fatalf("RedactURL(%q) = %q keeps part of an opaque URL", raw, got)
			}
		} else if g.Opaque != "" || g.Host != host || !samePath(g, u) {
			t.Fatalf("RedactURL(%q) = %q: host %q path %q, want %q %q", raw, got, g.Host, g.EscapedPath(), host, u.EscapedPath())
		}
		hadQuery, hasQuery := u.RawQuery != "" || u.ForceQuery, g.RawQuery != "" || g.ForceQuery
		if hasQuery && g.RawQuery != "REDACTED" || !opaque && hasQuery != hadQuery {
			t.Fatalf("RedactURL(%q) = %q: query %q, want REDACTED if the input has one", raw, got, g.RawQuery)
		}
		if g.Fragment != "" && g.Fragment != "REDACTED" || !opaque && (g.Fragment != "") != (u.Fragment != "") {
			t.Fatalf("RedactURL(%q) = %q: fragment %q, want REDACTED if the input has one", raw, got, g.Fragment)
		}
	})
}
