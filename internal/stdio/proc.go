package stdio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/rawsock"
)

// process is one running child: its pipes and its end. Only the pipe that
// owns it reads stdout; writes to stdin are serialised by wmu. Both are
// read and written through rawsock (in, out): on a call's path the
// scheduler's system-call state costs the runtime's monitor thread a
// wake-up per read and write. Deadlines and Close stay the files'.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	in     io.Writer // stdin's writer
	out    io.Reader // stdout's reader
	wmu    sync.Mutex
	exited chan struct{} // closed once the child has been waited for
	pgid   int
}

// ChildEnv returns environ without the sidecar's own SKILLS_SIDECAR_*
// settings: the child gets the container's environment, not the
// sidecar's configuration.
func ChildEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

// startProcess starts argv with env, its stdin and stdout as pipes and its
// stderr read line by line into log (see logStderr).
func startProcess(argv, env []string, log *zap.Logger, tag string, onDrop func()) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("stdio: no command")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, inR, outW, errW
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	closeAll(inR, outW, errW) // the child's ends
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, in: rawsock.NewFileWriter(inW), out: rawsock.NewFileReader(outR),
		exited: make(chan struct{}), pgid: cmd.Process.Pid}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	go logStderr(errR, log.With(zap.String("process", tag), zap.Int("pid", cmd.Process.Pid)), onDrop)
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// errCutMidLine is a write that failed after part of its line reached
// the pipe: whatever is written next would be read as the rest of that
// line, so nothing more may be.
var errCutMidLine = errors.New("stdio: a write to the process stopped mid-line")

// write sends one message line; deadline bounds a child that stopped
// reading its stdin. A write that fails part-way is errCutMidLine.
func (p *process) write(line []byte, deadline time.Time) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = p.stdin.SetWriteDeadline(deadline)
	n, err := p.in.Write(line)
	if err != nil && n > 0 {
		return fmt.Errorf("%w: %w", errCutMidLine, err)
	}
	return err
}

// stop ends the child as the stdio transport says a client does: close its
// stdin, wait, SIGTERM if it has not exited within grace, SIGKILL after
// another grace. The group is killed at the end either way, so nothing the
// child started outlives it. It returns once the child was waited for.
func (p *process) stop(grace time.Duration) {
	p.wmu.Lock()
	_ = p.stdin.Close()
	p.wmu.Unlock()
	if !p.waitExit(grace) {
		_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
		if !p.waitExit(grace) {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
			<-p.exited
		}
	}
	// The group outlives its leader while any member lives, so its id
	// cannot have been reused: stragglers are killed, not strangers.
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	_ = p.stdout.Close()
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// Bounds of what a process's stderr may cost the log.
const (
	stderrLineMax   = 4 << 10 // longer lines are cut
	stderrPerWindow = 100     // lines logged per window; the rest counted
	stderrWindow    = 10 * time.Second
)

// logStderr logs each stderr line at info (the transport text: stderr is
// not an error channel), tagged with the process; lines past
// stderrPerWindow in a window are dropped, counted and summarised.
func logStderr(f *os.File, log *zap.Logger, onDrop func()) {
	defer f.Close()
	r := bufio.NewReaderSize(f, stderrLineMax)
	start, logged, dropped := time.Now(), 0, 0
	for {
		line, err := r.ReadSlice('\n')
		cut := errors.Is(err, bufio.ErrBufferFull)
		if len(line) > 0 {
			if now := time.Now(); now.Sub(start) > stderrWindow {
				if dropped > 0 {
					log.Warn("upstream stderr lines dropped", zap.Int("lines", dropped))
				}
				start, logged, dropped = now, 0, 0
			}
			if logged < stderrPerWindow {
				logged++
				log.Info("upstream stderr", zap.String("line", strings.TrimRight(string(line), "\r\n")), zap.Bool("cut", cut))
			} else {
				dropped++
				onDrop()
			}
		}
		for cut { // skip the rest of a long line
			_, err = r.ReadSlice('\n')
			cut = errors.Is(err, bufio.ErrBufferFull)
		}
		if err != nil {
			return
		}
	}
}
