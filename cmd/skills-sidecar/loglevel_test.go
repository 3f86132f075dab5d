package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// TestAnnotationChangesAreNeverSilent: every run-time edit of the sidecar's
// annotations either applies (log-level) or is logged at warn with its key,
// once per value; the injector's own keys and unchanged values say nothing.
func TestAnnotationChangesAreNeverSilent(t *testing.T) {
	t.Parallel()
	p := config.AnnotationPrefix
	start := map[string]string{p + "upstream": "http://127.0.0.1:3000/mcp", p + "log-level": "info", p + "inject": "true"}
	type line struct{ Level, Msg, Key string }
	for _, tc := range []struct {
		name      string
		fixed     bool
		edits     []map[string]string // applied in order
		wantLevel zapcore.Level
		want      []line
	}{
		{name: "unchanged says nothing", edits: []map[string]string{start, start}, wantLevel: zapcore.InfoLevel},
		{name: "bad level warns once", wantLevel: zapcore.InfoLevel,
			edits: []map[string]string{with(start, p+"log-level", "loud"), with(start, p+"log-level", "loud")},
			want:  []line{{"warn", "annotation cannot be applied: not a log level (debug, info, warn, error)", p + "log-level"}}},
		// zap parses more names than the configuration accepts; a value
		// that would stop the next start is not applied now either.
		{name: "level zap knows but the sidecar refuses warns", wantLevel: zapcore.InfoLevel,
			edits: []map[string]string{with(start, p+"log-level", "fatal"), with(start, p+"log-level", "warning")},
			want: []line{
				{"warn", "annotation cannot be applied: not a log level (debug, info, warn, error)", p + "log-level"},
				{"warn", "annotation cannot be applied: not a log level (debug, info, warn, error)", p + "log-level"},
			}},
		{name: "level in capitals applies", wantLevel: zapcore.DebugLevel,
			edits: []map[string]string{with(start, p+"log-level", "Debug")},
			want:  []line{{"info", "log level changed by annotation", ""}}},
		{name: "level applies", wantLevel: zapcore.DebugLevel,
			edits: []map[string]string{with(start, p+"log-level", "debug")},
			want:  []line{{"info", "log level changed by annotation", ""}}},
		{name: "fixed level warns", fixed: true, wantLevel: zapcore.InfoLevel,
			edits: []map[string]string{with(start, p+"log-level", "debug")},
			want:  []line{{"warn", "annotation not applied: a flag or environment variable sets the log level", p + "log-level"}}},
		{name: "restart-only key warns per value", wantLevel: zapcore.InfoLevel,
			edits: []map[string]string{
				with(start, p+"upstream", "http://127.0.0.1:4000/mcp"),
				with(start, p+"upstream", "http://127.0.0.1:4000/mcp"),
				with(start, p+"upstream", "http://127.0.0.1:5000/mcp"),
			},
			want: []line{
				{"warn", "annotation changed at run time: it takes effect when the sidecar restarts", p + "upstream"},
				{"warn", "annotation changed at run time: it takes effect when the sidecar restarts", p + "upstream"},
			}},
		{name: "injector key is not the sidecar's", wantLevel: zapcore.InfoLevel,
			edits: []map[string]string{with(start, p+"inject", "false")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zapcore.DebugLevel)
			level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
			w := annotationWatch{fixed: tc.fixed, level: level, log: zap.New(core), start: start, warned: map[string]string{}}
			for _, e := range tc.edits {
				w.apply(e)
			}
			var got []line
			for _, e := range logs.All() {
				key, _ := e.ContextMap()["annotation"].(string)
				got = append(got, line{e.Level.String(), e.Message, key})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("log lines (-want +got):\n%s", diff)
			}
			if level.Level() != tc.wantLevel {
				t.Errorf("level = %v, want %v", level.Level(), tc.wantLevel)
			}
		})
	}
}

func with(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m))
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}

// TestLevelFixed: the log level is fixed by a flag or the environment, not
// by the arguments of a stdio server after "--", which are the server's
// own (many servers take a --log-level of their own).
func TestLevelFixed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		want    bool
	}{
		{name: "nothing", args: []string{"--listen", ":17080"}},
		{name: "flag", args: []string{"--log-level", "debug"}, want: true},
		{name: "flag with value", args: []string{"-log-level=debug"}, want: true},
		{name: "environment", environ: []string{config.EnvName("log-level") + "=debug"}, want: true},
		{name: "server's own flag", args: []string{"--plugin-dir", "p", "--", "server", "--log-level", "debug"}},
		{name: "flag before the server", args: []string{"--log-level=warn", "--", "server", "--log-level", "debug"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := levelFixed(tc.args, tc.environ); got != tc.want {
				t.Errorf("levelFixed(%q, %q) = %v, want %v", tc.args, tc.environ, got, tc.want)
			}
		})
	}
}
