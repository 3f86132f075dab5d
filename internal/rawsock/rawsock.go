package rawsock

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// rawConn is a stream socket's raw connection, or nil when nc has none the
// raw path may use.
func rawConn(nc net.Conn) syscall.RawConn {
	if !enabled {
		return nil
	}
	switch c := nc.(type) {
	case *net.TCPConn:
	case *net.UnixConn:
		if c.LocalAddr() == nil || c.LocalAddr().Network() != "unix" {
			return nil // datagram and packet sockets read 0 bytes without end of stream
		}
	default:
		return nil
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// reads is the retry loop of raw reads of one descriptor, which sockets
// and files share: a read that finds nothing gives the poller the wait
// (EAGAIN), an interrupted one is made again (EINTR). Reads are
// serialized, as the poller's own are.
type reads struct {
	rc syscall.RawConn
	fn func(fd uintptr) bool // made once: a read allocates nothing

	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
}

// rawCall is one raw read or write of fd: the count, or the errno.
type rawCall func(fd uintptr, p []byte) (int, syscall.Errno)

func (r *reads) init(rc syscall.RawConn, call rawCall) {
	r.rc = rc
	r.fn = func(fd uintptr) bool {
		for {
			n, errno := call(fd, r.p)
			switch errno {
			case 0:
				r.n = n
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits for the descriptor, then calls again
			default:
				r.errno = errno
				return true
			}
		}
	}
}

// read reads into p (not empty) once there is something to read: the count
// (0 at the end of the stream), or the errno of a failed read(2), or the
// raw connection's own error (a deadline, a closed descriptor).
func (r *reads) read(p []byte) (int, syscall.Errno, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p, r.n, r.errno = p, 0, 0
	err := r.rc.Read(r.fn)
	n, errno := r.n, r.errno
	r.p = nil
	return n, errno, err
}

// writes is the retry loop of raw writes of one descriptor, which sockets
// and files share: a write goes on until all of p is written, giving the
// poller the wait whenever the descriptor takes no more (EAGAIN). Writes
// are serialized, as the poller's own are.
type writes struct {
	rc syscall.RawConn
	fn func(fd uintptr) bool

	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
	short bool
}

func (w *writes) init(rc syscall.RawConn, call rawCall) {
	w.rc = rc
	w.fn = func(fd uintptr) bool {
		for w.n < len(w.p) {
			n, errno := call(fd, w.p[w.n:])
			switch errno {
			case 0:
				if n == 0 {
					w.short = true
					return true
				}
				w.n += n
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the poller waits until the descriptor takes more
			default:
				w.errno = errno
				return true
			}
		}
		return true
	}
}

// write writes all of p (not empty): the count written, and why it stopped
// short if it did: the errno of a failed write(2), a write that took
// nothing (short), or the raw connection's own error.
func (w *writes) write(p []byte) (n int, errno syscall.Errno, short bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p, w.n, w.errno, w.short = p, 0, 0, false
	err = w.rc.Write(w.fn)
	n, errno, short = w.n, w.errno, w.short
	w.p = nil
	return n, errno, short, err
}

// Reader reads nc's socket. Reads are serialized, as net.Conn's are.
type Reader struct {
	nc net.Conn
	reads
}

// NewReader returns a reader of nc's socket, or nc itself when nc is not a
// stream socket the raw path serves.
func NewReader(nc net.Conn) io.Reader {
	rc := rawConn(nc)
	if rc == nil {
		return nc
	}
	r := &Reader{nc: nc}
	r.init(rc, recv)
	return r
}

// Read reads as net.Conn's Read does: at most len(p) bytes, io.EOF (bare)
// at the end of the stream, every other error a *net.OpError whose Op is
// "read".
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno, err := r.read(p)
	switch {
	case err != nil:
		return 0, asOp(err, "read", r.nc)
	case errno != 0:
		return 0, opError("read", r.nc, os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Writer writes nc's socket. Writes are serialized, as net.Conn's are.
type Writer struct {
	nc net.Conn
	writes
}

// NewWriter returns a writer of nc's socket, or nc itself when nc is not a
// stream socket the raw path serves.
func NewWriter(nc net.Conn) io.Writer {
	rc := rawConn(nc)
	if rc == nil {
		return nc
	}
	w := &Writer{nc: nc}
	w.init(rc, send)
	return w
}

// Write writes all of p as net.Conn's Write does, or says how much it wrote
// before the error, a *net.OpError whose Op is "write".
func (w *Writer) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno, short, err := w.write(p)
	switch {
	case err != nil:
		return n, asOp(err, "write", w.nc)
	case errno != 0:
		return n, opError("write", w.nc, os.NewSyscallError("write", errno))
	case short:
		return n, opError("write", w.nc, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// Peek reads at most len(p) bytes of fd's socket without taking them and
// without waiting; a socket with nothing to read gives EAGAIN. Call it from
// a syscall.RawConn's Read callback.
func Peek(fd uintptr, p []byte) (int, error) {
	n, errno := peek(fd, p)
	if errno != 0 {
		return 0, errno
	}
	return n, nil
}

// asOp is the error net.Conn gives where the raw connection gave err (a
// deadline, a closed connection): the same *net.OpError, named for the call
// net.Conn would have made.
func asOp(err error, op string, nc net.Conn) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		cp := *oe
		cp.Op = op
		return &cp
	}
	return opError(op, nc, err)
}

func opError(op string, nc net.Conn, err error) error {
	return &net.OpError{Op: op, Net: nc.LocalAddr().Network(), Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: err}
}
