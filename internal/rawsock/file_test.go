//go:build linux && !386

package rawsock

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests hold the raw pipe reader and writer to what *os.File's Read
// and Write do on an os.Pipe (read(2) and write(2) in Go's poller), case by
// case, as rawsock_test.go does for sockets: the same checks run against
// the *os.File itself (the reference: a check that fails there is wrong)
// and against deliberately broken wrappers, each of which must fail the
// checks named for its fault.

// TestMain lets the test binary be the child of TestStdoutKeepsSIGPIPE:
// with childEnv set, it writes standard output (a pipe whose reader is
// gone) through the way the variable names, then exits 0.
func TestMain(m *testing.M) {
	if way, ok := os.LookupEnv(childEnv); ok {
		w := io.Writer(os.Stdout)
		if way == fileRaw.name {
			w = NewFileWriter(os.Stdout)
		}
		w.Write([]byte("x"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const childEnv = "RAWSOCK_TEST_STDOUT_WAY"

// fileWay is how a check reads the pipe's read end and writes its write
// end.
type fileWay struct {
	name string
	r    func(*os.File) io.Reader
	w    func(*os.File) io.Writer
}

var (
	fileReference = fileWay{"os.File", func(f *os.File) io.Reader { return f }, func(f *os.File) io.Writer { return f }}
	fileRaw       = fileWay{"rawsock", NewFileReader, NewFileWriter}
)

// pipe is an os.Pipe closed when the test ends.
func pipe(t *testing.T) (r, w *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// pathShape says whether err is what *os.File gives for op on f with
// cause: an *fs.PathError named op and f.Name() whose cause errors.Is
// target.
func pathShape(err error, op string, f *os.File, target error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return fmt.Errorf("error %v (%T) is not an *fs.PathError", err, err)
	}
	if pe.Op != op || pe.Path != f.Name() {
		return fmt.Errorf("error %v: Op %q Path %q, want %q %q", err, pe.Op, pe.Path, op, f.Name())
	}
	if !errors.Is(err, target) {
		return fmt.Errorf("error %v is not %v", err, target)
	}
	return nil
}

// sameText says whether err reads as the *os.File's own error ref.
func sameText(err, ref error) error {
	if err == nil || ref == nil || err.Error() != ref.Error() {
		return fmt.Errorf("error %v, os.File says %v", err, ref)
	}
	return nil
}

type fileCheck struct {
	name string
	run  func(t *testing.T, pr, pw *os.File, w fileWay) error
}

var fileChecks = []fileCheck{
	{"data both ways", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		return oneWayData(w.w(pw), pr, pw, w.r(pr))
	}},
	{"waits for data", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		return waitsForData(w.r(pr), pw)
	}},
	{"end of stream", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		return endOfStream(w.r(pr), pw, pw.Close)
	}},
	{"deadline passed", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		pr.SetReadDeadline(time.Now().Add(-time.Second))
		n, err := w.r(pr).Read(make([]byte, 4))
		if n != 0 {
			return fmt.Errorf("read %d bytes past the deadline", n)
		}
		if err := pathShape(err, "read", pr, os.ErrDeadlineExceeded); err != nil {
			return err
		}
		if te, ok := err.(interface{ Timeout() bool }); !ok || !te.Timeout() {
			return fmt.Errorf("error %v is not a timeout", err)
		}
		_, ref := pr.Read(make([]byte, 4))
		return sameText(err, ref)
	}},
	{"deadline while waiting", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		pr.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		_, err := w.r(pr).Read(make([]byte, 4))
		return pathShape(err, "read", pr, os.ErrDeadlineExceeded)
	}},
	{"closed while waiting", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		r := w.r(pr)
		go func() {
			time.Sleep(20 * time.Millisecond)
			pr.Close()
		}()
		_, err := r.Read(make([]byte, 4))
		if err := pathShape(err, "read", pr, os.ErrClosed); err != nil {
			return err
		}
		_, ref := pr.Read(make([]byte, 4))
		return sameText(err, ref)
	}},
	{"closed before", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		r, wr := w.r(pr), w.w(pw)
		pr.Close()
		pw.Close()
		_, err := r.Read(make([]byte, 4))
		if err := pathShape(err, "read", pr, os.ErrClosed); err != nil {
			return err
		}
		_, ref := pr.Read(make([]byte, 4))
		if err := sameText(err, ref); err != nil {
			return err
		}
		n, err := wr.Write([]byte("x"))
		if n != 0 {
			return fmt.Errorf("wrote %d bytes to a closed file", n)
		}
		if err := pathShape(err, "write", pw, os.ErrClosed); err != nil {
			return err
		}
		_, ref = pw.Write([]byte("x"))
		return sameText(err, ref)
	}},
	// The kernel raises SIGPIPE on such a write; Go's runtime lets it kill
	// the process only for descriptors 1 and 2, so this check returning at
	// all is the test process having survived it.
	{"write to a closed reader", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		pr.Close()
		wr := w.w(pw)
		for range 2 {
			n, err := wr.Write([]byte("x"))
			if n != 0 {
				return fmt.Errorf("wrote %d bytes with no reader", n)
			}
			if err := pathShape(err, "write", pw, syscall.EPIPE); err != nil {
				return err
			}
			_, ref := pw.Write([]byte("x"))
			if err := sameText(err, ref); err != nil {
				return err
			}
		}
		return nil
	}},
	{"big write", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		return bigWrite(w.w(pw), pr, pw.Close)
	}},
	{"write deadline counts what left", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		return deadlineCounts(w.w(pw), 4<<20, // more than the pipe holds: the write must wait, then time out
			func() { pw.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)) },
			func(err error) error { return pathShape(err, "write", pw, os.ErrDeadlineExceeded) },
			pw.Close, pr, func() { pr.SetReadDeadline(time.Now().Add(5 * time.Second)) })
	}},
	{"empty", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		return emptyCalls(w.r(pr), w.w(pw))
	}},
	{"read and write at once", func(t *testing.T, pr, pw *os.File, w fileWay) error {
		const size = 2 << 20
		out := make([]byte, size)
		rand.Read(out)
		var wg sync.WaitGroup
		var werr error
		wg.Go(func() { _, werr = w.w(pw).Write(out) })
		in := make([]byte, size)
		_, rerr := io.ReadFull(w.r(pr), in)
		wg.Wait()
		if werr != nil || rerr != nil {
			return fmt.Errorf("write %v, read %v", werr, rerr)
		}
		if !bytes.Equal(in, out) {
			return errors.New("bytes differ after reading while writing")
		}
		return nil
	}},
}

func runFileCheck(t *testing.T, c fileCheck, w fileWay) error {
	pr, pw := pipe(t)
	return c.run(t, pr, pw, w)
}

func TestLikeOSFile(t *testing.T) {
	for _, w := range []fileWay{fileReference, fileRaw} {
		for _, c := range fileChecks {
			t.Run(w.name+"/"+c.name, func(t *testing.T) {
				if err := runFileCheck(t, c, w); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// closingUnmapped is a wrapper that gives the poller's error for a closed
// file where os.File gives os.ErrClosed.
type closingUnmapped struct {
	r io.Reader
	w io.Writer
}

func unmapClosing(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err == os.ErrClosed {
		return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: errors.New("use of closed file")}
	}
	return err
}
func (c closingUnmapped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	return n, unmapClosing(err)
}
func (c closingUnmapped) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	return n, unmapClosing(err)
}

// brokenFile are broken pipe wrappers, each with the checks its fault must
// fail.
var brokenFile = []struct {
	way   fileWay
	fails []string
}{
	{fileWay{"end of stream as nothing read", func(f *os.File) io.Reader { return eofAsNil{NewFileReader(f)} }, NewFileWriter},
		[]string{"end of stream"}},
	{fileWay{"bare errors", func(f *os.File) io.Reader { return bare{r: NewFileReader(f)} }, func(f *os.File) io.Writer { return bare{w: NewFileWriter(f)} }},
		[]string{"deadline passed", "deadline while waiting", "closed while waiting", "closed before", "write to a closed reader", "write deadline counts what left"}},
	{fileWay{"closed file unmapped", func(f *os.File) io.Reader { return closingUnmapped{r: NewFileReader(f)} }, func(f *os.File) io.Writer { return closingUnmapped{w: NewFileWriter(f)} }},
		[]string{"closed while waiting", "closed before"}},
	{fileWay{"a short write said whole", NewFileReader, func(f *os.File) io.Writer { return shortWrite{NewFileWriter(f)} }},
		[]string{"big write"}},
	{fileWay{"no count on error", NewFileReader, func(f *os.File) io.Writer { return noCount{NewFileWriter(f)} }},
		[]string{"write deadline counts what left"}},
}

func TestBrokenFileWrappersFail(t *testing.T) {
	byName := map[string]fileCheck{}
	for _, c := range fileChecks {
		byName[c.name] = c
	}
	for _, b := range brokenFile {
		for _, name := range b.fails {
			c, ok := byName[name]
			if !ok {
				t.Fatalf("no check %q", name)
			}
			t.Run(b.way.name+"/"+name, func(t *testing.T) {
				if err := runFileCheck(t, c, b.way); err == nil {
					t.Errorf("check %q passed a wrapper whose fault is %q", name, b.way.name)
				}
			})
		}
	}
}

func TestRawPathOnlyForPipes(t *testing.T) {
	pr, pw := pipe(t)
	if _, ok := NewFileReader(pr).(*FileReader); !ok {
		t.Error("an os.Pipe read end did not get the raw reader")
	}
	if _, ok := NewFileWriter(pw).(*FileWriter); !ok {
		t.Error("an os.Pipe write end did not get the raw writer")
	}
	if r := NewFileReader(pw); r != io.Reader(pw) {
		t.Errorf("a write end read got %T, want itself", r)
	}
	if w := NewFileWriter(pr); w != io.Writer(pr) {
		t.Errorf("a read end written got %T, want itself", w)
	}

	reg, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if r := NewFileReader(reg); r != io.Reader(reg) {
		t.Errorf("a regular file got %T, want itself", r)
	}
	if w := NewFileWriter(reg); w != io.Writer(reg) {
		t.Errorf("a regular file got %T, want itself", w)
	}

	// Standard output keeps os.File's write, which raises SIGPIPE when
	// the reader is gone; it is a pipe or not, depending on how the test
	// runs: itself either way.
	if w := NewFileWriter(os.Stdout); w != io.Writer(os.Stdout) {
		t.Errorf("standard output got %T, want itself", w)
	}

	// A blocking pipe (os.NewFile of one) is not the poller's: a raw read
	// of it would wait holding its thread.
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	br, bw := os.NewFile(uintptr(fds[0]), "br"), os.NewFile(uintptr(fds[1]), "bw")
	defer br.Close()
	defer bw.Close()
	if r := NewFileReader(br); r != io.Reader(br) {
		t.Errorf("a blocking pipe got %T, want itself", r)
	}
	if w := NewFileWriter(bw); w != io.Writer(bw) {
		t.Errorf("a blocking pipe got %T, want itself", w)
	}

	// An os.Pipe end whose Fd was taken is blocking, though still the
	// poller's.
	fr, _ := pipe(t)
	fr.Fd()
	if r := NewFileReader(fr); r != io.Reader(fr) {
		t.Errorf("a pipe made blocking by Fd got %T, want itself", r)
	}

	// A closed pipe is no longer one.
	cr, cw := pipe(t)
	cr.Close()
	cw.Close()
	if r := NewFileReader(cr); r != io.Reader(cr) {
		t.Errorf("a closed pipe got %T, want itself", r)
	}
}

// A FIFO opened by name is the poller's as os.Pipe's ends are.
func TestFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	opened := make(chan *os.File, 1)
	go func() { // opening one end waits for the other
		f, err := os.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	fw, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	fr := <-opened
	if fr == nil {
		t.FailNow()
	}
	defer fr.Close()
	r, w := NewFileReader(fr), NewFileWriter(fw)
	if _, ok := r.(*FileReader); !ok {
		t.Errorf("a FIFO's read end got %T, want the raw reader", r)
	}
	if _, ok := w.(*FileWriter); !ok {
		t.Errorf("a FIFO's write end got %T, want the raw writer", w)
	}
	if _, err := w.Write([]byte("fifo")); err != nil {
		t.Fatal(err)
	}
	fw.Close()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "fifo" {
		t.Errorf("read %q, %v; want fifo then the end", got, err)
	}
}

// A pipe's read or write of ready bytes allocates nothing: they sit on
// every call to a stdio server.
func TestNoAllocationsOnPipes(t *testing.T) {
	pr, pw := pipe(t)
	r, w := NewFileReader(pr), NewFileWriter(pw)
	if _, ok := r.(*FileReader); !ok {
		t.Fatalf("the read end got %T, not the raw reader", r)
	}
	noAllocs(t, w, r, nil, nil)
}

// A write to standard output whose reader is gone kills the process with
// SIGPIPE, as a shell pipeline expects (os.File raises it for descriptors
// 1 and 2): the writer of standard output keeps it. The child's standard
// output is a non-blocking pipe, which its os.Stdout puts in the poller,
// the case where the raw path would otherwise serve it.
func TestStdoutKeepsSIGPIPE(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []fileWay{fileReference, fileRaw} {
		t.Run(w.name, func(t *testing.T) {
			var fds [2]int
			if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
				t.Fatal(err)
			}
			syscall.Close(fds[0]) // the reader is gone
			out := os.NewFile(uintptr(fds[1]), "out")
			defer out.Close()
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+w.name)
			cmd.Stdout = out
			err := cmd.Run()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
				t.Errorf("the child writing standard output with no reader ended with %v, want killed by SIGPIPE", err)
			}
		})
	}
}
