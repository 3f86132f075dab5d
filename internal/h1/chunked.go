package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// chunked decodes a chunked body (RFC 9112 section 7.1) from br up to and
// including its last chunk's size line, as net/http's decoder does: the
// same data, the same refusals (a bare LF or a stray CR in a size line, a
// size line of 4096 bytes or more, a size that is not 1 to 16 hex digits,
// data not followed by CRLF, more than 16 KiB of framing beyond what
// the data justifies), io.ErrUnexpectedEOF for a body cut short. What
// follows the last chunk (trailer fields and the empty line) is left in br.
type chunked struct {
	br     *bufio.Reader
	left   uint64 // bytes of the current chunk not yet read
	crlf   bool   // the CRLF after a chunk's data is due
	excess int64  // framing beyond what the data justifies
	err    error
}

const maxChunkLine = 4096

func (c *chunked) Read(p []byte) (int, error) {
	n := 0
	for c.err == nil {
		if c.crlf {
			if n > 0 && c.br.Buffered() < 2 {
				break // return what was read rather than wait
			}
			var two [2]byte
			if _, err := io.ReadFull(c.br, two[:]); err != nil {
				c.err = unexpected(err)
				break
			}
			if two != [2]byte{'\r', '\n'} {
				c.err = errors.New("malformed chunked encoding")
				break
			}
			c.crlf = false
		}
		if c.left == 0 {
			if n > 0 && !c.lineBuffered() {
				break
			}
			c.sizeLine()
			continue
		}
		if len(p) == 0 {
			break
		}
		q := p
		if uint64(len(q)) > c.left {
			q = q[:c.left]
		}
		m, err := c.br.Read(q)
		n += m
		p = p[m:]
		c.left -= uint64(m)
		switch {
		case err == io.EOF:
			c.err = io.ErrUnexpectedEOF
		case err != nil:
			c.err = err
		case c.left == 0:
			c.crlf = true
		}
	}
	return n, c.err
}

// lineBuffered reports whether a whole line is waiting in br.
func (c *chunked) lineBuffered() bool {
	b, _ := c.br.Peek(c.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// sizeLine reads a chunk's size line into left, or io.EOF into err for the
// last chunk.
func (c *chunked) sizeLine() {
	line, err := c.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		c.err = errors.New("header line too long")
		return
	case err != nil:
		c.err = unexpected(err)
		return
	}
	cr := bytes.IndexByte(line, '\r')
	switch {
	case cr < 0:
		c.err = errors.New("chunked line ends with bare LF")
		return
	case cr != len(line)-2:
		c.err = errors.New("invalid CR in chunked line")
		return
	}
	line = line[:cr]
	if len(line) >= maxChunkLine {
		c.err = errors.New("header line too long")
		return
	}
	c.excess += int64(len(line)) + 2
	line = bytes.TrimRight(line, " \t")
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i] // a chunk extension, ignored
	}
	size, ok := hexSize(line)
	if !ok {
		c.err = errors.New("invalid chunk size")
		return
	}
	c.left = size
	c.excess = max(c.excess-16-2*int64(size), 0)
	if c.excess > 16<<10 {
		c.err = errors.New("chunked encoding contains too much non-data")
		return
	}
	if size == 0 {
		c.err = io.EOF
	}
}

// hexSize parses 1 to 16 hex digits.
func hexSize(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, true
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
