package inject

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapCore writes JSON log lines to w at cfg's level.
func zapCore(cfg zap.Config, w io.Writer) zapcore.Core {
	return zapcore.NewCore(zapcore.NewJSONEncoder(cfg.EncoderConfig), zapcore.AddSync(w), cfg.Level)
}
