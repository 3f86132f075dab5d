package main

import (
	"context"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// watchLogLevel re-reads the annotations file every interval and applies a
// changed skills-sidecar.io/log-level to level, so operators can turn on
// debug logs by annotating the pod. The flag and environment still win when
// they set the level.
func watchLogLevel(ctx context.Context, path string, fixed bool, level zap.AtomicLevel, log *zap.Logger, interval time.Duration) {
	if path == "" || fixed {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := config.ReadAnnotations(os.ReadFile, path)
		if err != nil {
			continue
		}
		ann, err := config.ParseAnnotations(b)
		if err != nil {
			continue
		}
		v, ok := ann[config.AnnotationPrefix+"log-level"]
		if !ok {
			continue
		}
		lvl, err := zapcore.ParseLevel(v)
		if err != nil || lvl == level.Level() {
			continue
		}
		// The line is written at whichever of the two levels is more
		// verbose, so raising warn to info is logged too. Not "level":
		// that is the JSON encoder's own key for the line's level.
		from := level.Level()
		if lvl < from {
			level.SetLevel(lvl)
		}
		log.Info("log level changed by annotation", zap.String("log_level", lvl.String()), zap.String("from", from.String()))
		level.SetLevel(lvl)
	}
}
