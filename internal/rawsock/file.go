package rawsock

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// fileConn is f's raw connection when the raw path serves f, else nil. It
// serves a pipe or FIFO (a regular file's read can wait in the kernel,
// where the poller cannot wait for it), open the one way it is used
// (write: for writing only, else for reading only), non-blocking and
// registered with the runtime's poller (os.Pipe's ends are), and neither
// standard output nor standard error: os.File raises SIGPIPE on a write
// there that finds the reader gone, which the raw path would not.
func fileConn(f *os.File, write bool) syscall.RawConn {
	if !enabled || f == nil || fileClosing() == nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	ok := false
	if err := rc.Control(func(fd uintptr) { ok = fd != 1 && fd != 2 && oneWay(fd, write) }); err != nil || !ok {
		return nil
	}
	// Only a file the poller watches takes a deadline. The one tried is
	// that of the way f is not open: clearing it changes no call that
	// could succeed.
	probe := f.SetWriteDeadline
	if write {
		probe = f.SetReadDeadline
	}
	if probe(time.Time{}) != nil {
		return nil
	}
	return rc
}

// fileClosing is the error a closed file's syscall.RawConn gives: the
// poller's own (internal/poll's ErrFileClosing, not exported), which
// os.File's Read and Write give as os.ErrClosed. It is learned once from a
// pipe closed for the purpose; nil if that failed, and then no file takes
// the raw path.
var fileClosing = sync.OnceValue(func() error {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	w.Close()
	rc, err := r.SyscallConn()
	r.Close()
	if err != nil {
		return nil
	}
	return rc.Read(func(uintptr) bool { return true })
})

// pathError is the error os.File gives for op on f where the raw call or
// the raw connection gave err.
func pathError(op string, f *os.File, err error) error {
	if err == fileClosing() {
		err = os.ErrClosed
	}
	return &fs.PathError{Op: op, Path: f.Name(), Err: err}
}

// FileReader reads a pipe's read end. Reads are serialized, as
// *os.File's are.
type FileReader struct {
	f *os.File
	reads
}

// NewFileReader returns a reader of f, the read end of a pipe or a FIFO,
// or f itself when the raw path does not serve it (see fileConn). f's read
// deadline, set on f, bounds its reads. Once f is read through the raw
// path, f.Fd must not be called: it makes the descriptor blocking, and a
// raw read would then wait holding its thread.
func NewFileReader(f *os.File) io.Reader {
	rc := fileConn(f, false)
	if rc == nil {
		return f
	}
	r := &FileReader{f: f}
	r.init(rc, read)
	return r
}

// Read reads as *os.File's Read does: at most len(p) bytes, io.EOF (bare)
// at the end of the stream, every other error an *fs.PathError whose Op is
// "read" (os.ErrClosed once f is closed, os.ErrDeadlineExceeded past the
// read deadline, the errno of a failed read(2)).
func (r *FileReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.f.Read(p) // os.File answers it without a read(2)
	}
	n, errno, err := r.read(p)
	switch {
	case err != nil:
		return 0, pathError("read", r.f, err)
	case errno != 0:
		return 0, pathError("read", r.f, errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// FileWriter writes a pipe's write end. Writes are serialized, as
// *os.File's are.
type FileWriter struct {
	f *os.File
	writes
}

// NewFileWriter returns a writer of f, the write end of a pipe or a FIFO,
// or f itself when the raw path does not serve it (see fileConn). f's
// write deadline, set on f, bounds its writes. Once f is written through
// the raw path, f.Fd must not be called (see NewFileReader).
func NewFileWriter(f *os.File) io.Writer {
	rc := fileConn(f, true)
	if rc == nil {
		return f
	}
	w := &FileWriter{f: f}
	w.init(rc, write)
	return w
}

// Write writes all of p as *os.File's Write does, or says how much it
// wrote before the error, an *fs.PathError whose Op is "write" (EPIPE once
// the read end is closed; the process goes on, as os.File's does for a
// descriptor other than standard output and error).
func (w *FileWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return w.f.Write(p) // os.File's checks, rare enough to keep its call
	}
	n, errno, short, err := w.write(p)
	switch {
	case err != nil:
		return n, pathError("write", w.f, err)
	case errno != 0:
		return n, pathError("write", w.f, errno)
	case short:
		return n, pathError("write", w.f, io.ErrUnexpectedEOF)
	}
	return n, nil
}
