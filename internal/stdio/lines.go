package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLine is the longest stdout line (one JSON-RPC message) read from
// a process. A 16 MiB file returned as base64 inside a JSON reply needs about
// 22 MiB; 32 MiB leaves room for the envelope and escapes.
const DefaultMaxLine = 32 << 20

// overlongKeep is how much of the start and of the end of an overlong line
// is kept, to find the request id it answers.
const overlongKeep = 4 << 10

// errLineTooLong reports a line over the limit; lineReader.next returns
// its start and end in an *overlong.
var errLineTooLong = errors.New("stdio: line over the limit")

// overlong is what is kept of a line over the limit: its first and last
// overlongKeep bytes and its length.
type overlong struct {
	head, tail []byte
	n          int
}

// lineReader reads newline-delimited messages of at most max bytes (the
// stdio transport's framing: one message per line, no embedded newline).
// A line over max is consumed whole, never held: next returns
// errLineTooLong with what was kept of it, and the following line is read
// normally.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its "\n" (nor a "\r" before it). The
// last line of the stream needs no newline. At the end it returns io.EOF.
func (l *lineReader) next() ([]byte, *overlong, error) {
	var buf []byte
	var long *overlong
	for {
		frag, err := l.r.ReadSlice('\n')
		switch {
		case long != nil:
			long.n += len(frag)
			long.tail = keepTail(long.tail, frag)
		case len(buf)+len(frag) > l.max+1: // +1: the newline is not the message's
			long = &overlong{n: len(buf) + len(frag)}
			long.head = append(append([]byte(nil), buf[:min(len(buf), overlongKeep)]...), frag[:min(len(frag), overlongKeep-min(len(buf), overlongKeep))]...)
			long.tail = keepTail(keepTail(nil, buf), frag)
			buf = nil
		default:
			buf = append(buf, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (err != io.EOF || (len(buf) == 0 && long == nil)) {
			return nil, nil, err
		}
		break
	}
	if long != nil {
		return nil, long, errLineTooLong
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	buf = bytes.TrimSuffix(buf, []byte("\r"))
	if len(buf) > l.max {
		k := min(len(buf), overlongKeep)
		return nil, &overlong{head: buf[:k], tail: buf[len(buf)-k:], n: len(buf)}, errLineTooLong
	}
	return buf, nil, nil
}

// keepTail appends b to tail and keeps the last overlongKeep bytes.
func keepTail(tail, b []byte) []byte {
	if len(b) >= overlongKeep {
		return append(tail[:0], b[len(b)-overlongKeep:]...)
	}
	tail = append(tail, b...)
	if len(tail) > overlongKeep {
		tail = append(tail[:0], tail[len(tail)-overlongKeep:]...)
	}
	return tail
}
