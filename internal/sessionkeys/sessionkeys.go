// Package sessionkeys owns the keys the era bridge's legacy front seals and
// opens its session ids with (package sessionid): read from the
// session-keys-file and re-read when it changes (a mounted Secret is
// updated in place by the kubelet, through a symlink swap, and not on
// every replica at the same moment), or, without a file, one random key
// of this process, so that sessions open on the replica that minted them
// only.
//
// RunCLI is the session-keys command: a new key, and the three steps of a
// rotation applied to a keys file.
//
// It reads one small file and logs what it does; it never logs a key or a
// line of the file, and it does not seal or open anything itself.
package sessionkeys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
)

// DefaultInterval is how often the file is read again to see a change:
// small next to the kubelet's sync of a Secret volume (about a minute),
// and the file is a few hundred bytes.
const DefaultInterval = 5 * time.Second

// Source holds the current keys. Build it with Open.
type Source struct {
	path     string
	interval time.Duration
	log      *zap.Logger

	cur      atomic.Pointer[sessionid.Keys]
	fromFile atomic.Bool
	mu       sync.Mutex
	last     []byte        // the file's bytes last read
	changed  chan struct{} // closed (and replaced) when the keys change
}

// Options tune Open.
type Options struct {
	// Interval is how often the file is read again; 0 means
	// DefaultInterval.
	Interval time.Duration
	// Logger receives reloads and problems; nil logs nothing.
	Logger *zap.Logger
}

// Open reads the keys file at path. An empty path, or a file that does
// not exist (an optional Secret volume whose Secret is absent), gives a
// random key of this process, and Run keeps looking for the file; a file
// that holds no valid keys is an error naming the file and the line.
func Open(path string, o Options) (*Source, error) {
	s := &Source{path: path, interval: o.Interval, log: o.Logger, changed: make(chan struct{})}
	if s.interval <= 0 {
		s.interval = DefaultInterval
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.cur.Store(processKey())
	if path == "" {
		return s, nil
	}
	b, err := read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("session-keys-file %s: %w", path, err)
	}
	k, err := sessionid.ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("session-keys-file %s: %w", path, err)
	}
	s.cur.Store(k)
	s.fromFile.Store(true)
	s.last = b
	return s, nil
}

func processKey() *sessionid.Keys {
	k, _ := sessionid.NewKeys(sessionid.NewRandomKey()) // one key of the right size: never fails
	return k
}

// read reads the file, bounded: a keys file is small.
func read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, sessionid.MaxKeysFile+1))
}

// Keys returns the current keys; never nil.
func (s *Source) Keys() *sessionid.Keys { return s.cur.Load() }

// Changed returns a channel closed when the keys change (the keys file
// read again with other keys): the holder of a session's state then ends
// those whose key is gone. Call it again after it closes.
func (s *Source) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// FromFile reports whether the keys come from the file (shared with the
// other replicas that mount it) rather than from this process alone.
func (s *Source) FromFile() bool { return s.fromFile.Load() }

// Path is the keys file's path; "" when none is configured.
func (s *Source) Path() string { return s.path }

// Run reads the file again every interval until ctx ends, and takes its
// keys when its bytes changed and parse. A file that no longer parses, or
// disappears, keeps the keys last read (and is logged): a half-written or
// deleted Secret must not end every session.
func (s *Source) Run(ctx context.Context) {
	if s.path == "" {
		return
	}
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.reload()
		}
	}
}

func (s *Source) reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := read(s.path)
	if err != nil {
		if s.last != nil {
			s.log.Warn("session keys file unreadable; keeping the keys last read", zap.String("file", s.path), zap.Error(err))
			s.last = nil
		}
		return
	}
	if bytes.Equal(b, s.last) {
		return
	}
	s.last = b
	k, err := sessionid.ParseKeys(b)
	if err != nil {
		s.log.Error("session keys file rejected; keeping the keys last read", zap.String("file", s.path), zap.Error(err))
		return
	}
	s.cur.Store(k)
	s.fromFile.Store(true)
	close(s.changed)
	s.changed = make(chan struct{})
	s.log.Info("session keys loaded", zap.String("file", s.path), zap.Int("keys", k.Len()))
}
