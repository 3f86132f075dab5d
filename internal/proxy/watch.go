package proxy

import (
	"bytes"
	"io"
)

// resourcesChanged is the method prefix of the two notifications that say
// the upstream's resources changed (updated, list_changed).
const resourcesChanged = `"notifications/resources/`

// watchBody passes an SSE stream through untouched while looking for
// resource-change notifications in the bytes going by. It parses nothing and
// buffers nothing but the tail of the previous read, so a method name split
// across two reads is still seen.
type watchBody struct {
	io.ReadCloser
	fire func()
	tail [len(resourcesChanged) - 1]byte // the stream's last bytes so far
	n    int                             // bytes of tail in use
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.scan(p[:n])
	}
	return n, err
}

func (b *watchBody) scan(chunk []byte) {
	const k = len(resourcesChanged) - 1
	// The tail joined with the chunk's start covers a pattern straddling
	// reads; the chunk itself covers the rest.
	var buf [2 * k]byte
	joined := append(append(buf[:0], b.tail[:b.n]...), chunk[:min(len(chunk), k)]...)
	if bytes.Contains(joined, []byte(resourcesChanged)) || bytes.Contains(chunk, []byte(resourcesChanged)) {
		b.fire()
	}
	if len(chunk) >= k {
		b.n = copy(b.tail[:], chunk[len(chunk)-k:])
		return
	}
	// A short read: keep the last k bytes of tail and chunk together.
	all := append(append(buf[:0], b.tail[:b.n]...), chunk...)
	b.n = copy(b.tail[:], all[max(0, len(all)-k):])
}
