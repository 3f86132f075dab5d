package stdio

import (
	"bytes"
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Sync() error { return nil }

// after returns what follows the last occurrence of marker, or "".
func (s *syncBuffer) after(marker string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	str := s.b.String()
	i := strings.LastIndex(str, marker)
	if i < 0 {
		return ""
	}
	return str[i+len(marker):]
}

func newTestLogger(w *syncBuffer) *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), zap.DebugLevel))
}
