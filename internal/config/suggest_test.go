package config

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	t.Parallel()
	keys := []string{"upstream", "plugin-dir", "listen", "log-level", "metrics-listen", "auth-gate"}
	for _, tc := range []struct{ typed, want string }{
		{"upstrem", "upstream"},
		{"UPSTREAM", "upstream"},     // case is ignored
		{"plugin_dir", "plugin-dir"}, // '_' is '-'
		{"plugin-dri", "plugin-dir"}, // a transposition is two edits, within 1+10/4
		{"loglevel", "log-level"},    // a missing dash
		{"metrics-listn", "metrics-listen"},
		{"frobnicate", ""}, // nothing close
		{"up", ""},         // a short word needs a near-exact match
		{"lisen", "listen"},
		{"auth", ""}, // a prefix alone is too far
	} {
		if got := Suggest(tc.typed, keys); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}

func TestLoadSuggestsKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  Sources
		want string
	}{
		{"annotation", Sources{Annotations: []byte(AnnotationPrefix + `upstrem="http://x/mcp"` + "\n")},
			"annotation " + AnnotationPrefix + "upstrem: unknown key (did you mean " + AnnotationPrefix + "upstream?)"},
		{"injector annotation", Sources{Annotations: []byte(AnnotationPrefix + `plugin-configmap="p"` + "\n")},
			"(did you mean " + AnnotationPrefix + "plugin-configmaps?)"},
		{"environment", Sources{Environ: []string{"SKILLS_SIDECAR_LOG_LEVL=debug"}},
			"environment SKILLS_SIDECAR_LOG_LEVL: unknown key (did you mean SKILLS_SIDECAR_LOG_LEVEL?)"},
		{"flag", Sources{Args: []string{"--listen=127.0.0.1:0", "--auth-gat", "none"}},
			"flag --auth-gat: unknown flag (did you mean --auth-gate?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Load(tc.src)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestWarnings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		upstream string
		want     int
	}{
		{"http://app:3000", 1},
		{"http://user:secret@app:3000", 1},
		{"http://app:3000/", 0},
		{"http://app:3000/mcp", 0},
		{"", 0}, // the embedded demo
	} {
		c := Defaults()
		c.Upstream = tc.upstream
		got := c.Warnings()
		if len(got) != tc.want {
			t.Errorf("Warnings(upstream %q) = %q, want %d", tc.upstream, got, tc.want)
		}
		for _, w := range got {
			if !strings.HasPrefix(w, "upstream: ") || !strings.Contains(w, "/mcp") || strings.Contains(w, "secret") {
				t.Errorf("Warnings(upstream %q) = %q: want it to name the key and /mcp, and no credential", tc.upstream, w)
			}
		}
	}
}
