package main

import (
	"context"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// watchLogLevel re-reads the annotations file every interval and applies a
// changed skills-sidecar.io/log-level to level, so operators can turn on
// debug logs by annotating the pod. The flag and environment still win when
// they set the level (fixed). Any other change to the sidecar's annotations,
// and a log-level it cannot apply, is logged at warn with the key, so an
// edit that needs a restart is never ignored silently.
func watchLogLevel(ctx context.Context, path string, fixed bool, level zap.AtomicLevel, log *zap.Logger, interval time.Duration) {
	if path == "" {
		return
	}
	w := annotationWatch{fixed: fixed, level: level, log: log, start: readAnnotations(path), warned: map[string]string{}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ann := readAnnotations(path); ann != nil {
			w.apply(ann)
		}
	}
}

// readAnnotations reads and parses the annotations file; nil when it cannot
// (missing, being replaced, malformed: the next tick tries again).
func readAnnotations(path string) map[string]string {
	b, err := config.ReadAnnotations(os.ReadFile, path)
	if err != nil || b == nil {
		return nil
	}
	ann, err := config.ParseAnnotations(b)
	if err != nil {
		return nil
	}
	return ann
}

// annotationWatch applies what can change at run time and warns once per
// value about what cannot.
type annotationWatch struct {
	fixed  bool
	level  zap.AtomicLevel
	log    *zap.Logger
	start  map[string]string // the annotations the configuration was loaded from
	warned map[string]string // key -> the value last warned about
}

const logLevelKey = config.AnnotationPrefix + "log-level"

func (w *annotationWatch) apply(ann map[string]string) {
	for k, v := range ann {
		name, ok := strings.CutPrefix(k, config.AnnotationPrefix)
		if !ok || config.IsInjectorKey(name) || k == logLevelKey || v == w.start[k] {
			continue
		}
		w.warnOnce(k, v, "annotation changed at run time: it takes effect when the sidecar restarts")
	}
	v, ok := ann[logLevelKey]
	if !ok {
		return
	}
	lvl, err := zapcore.ParseLevel(v)
	switch {
	case err != nil || !config.ValidLogLevel(v):
		w.warnOnce(logLevelKey, v, "annotation cannot be applied: not a log level (debug, info, warn, error)")
		return
	case w.fixed:
		if v != w.start[logLevelKey] {
			w.warnOnce(logLevelKey, v, "annotation not applied: a flag or environment variable sets the log level")
		}
		return
	case lvl == w.level.Level():
		return
	}
	// The line is written at whichever of the two levels is more verbose,
	// so raising warn to info is logged too. Not "level": that is the JSON
	// encoder's own key for the line's level.
	from := w.level.Level()
	if lvl < from {
		w.level.SetLevel(lvl)
	}
	w.log.Info("log level changed by annotation", zap.String("log_level", lvl.String()), zap.String("from", from.String()))
	w.level.SetLevel(lvl)
}

// warnOnce logs msg for key unless it was already logged for this value.
// Values are not logged: an annotation may carry a URL with credentials.
func (w *annotationWatch) warnOnce(key, value, msg string) {
	if last, ok := w.warned[key]; ok && last == value {
		return
	}
	w.warned[key] = value
	w.log.Warn(msg, zap.String("annotation", key))
}
