package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// env is the processes a soak runs and what it knows about them.
type env struct {
	o                       Options
	dir                     string
	sidecarBin, upstreamBin string
	upAddr                  string
	mcpURL, metricsBase     string
	upPort, mcpPort         int
	plugin                  *Plugin

	mu       sync.Mutex
	upstream *Process
	sidecar  *Process

	warnLines, errorLines atomic.Int64
	raceOrPanic           atomic.Bool
	logs                  sidecarLog
}

// sidecarLog is what the soak reads from the sidecar's JSON log: warnings
// and errors by message, and the catalog loads it reports.
type sidecarLog struct {
	mu sync.Mutex
	// byMsg counts warn and error lines by level and message.
	byMsg map[string]int
	// loads counts "plugin loaded" lines; partial those that published
	// fewer skills than the plugin has, or reported problems.
	loads, partial int
	// itemSamples are the first few "plugin item" warnings.
	itemSamples []string
}

// logLine is the part of a zap JSON line the soak reads.
type logLine struct {
	Level    string `json:"level"`
	Msg      string `json:"msg"`
	Skills   *int   `json:"skills"`
	Problems int    `json:"problems"`
	Path     string `json:"path"`
	Reason   string `json:"reason"`
}

// record counts one JSON log line of the sidecar; skills is the number of
// skills every revision of the plugin has.
func (s *sidecarLog) record(line string, skills int) {
	var l logLine
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &l) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.Level == "warn" || l.Level == "error" {
		if s.byMsg == nil {
			s.byMsg = map[string]int{}
		}
		if _, ok := s.byMsg[l.Level+": "+l.Msg]; ok || len(s.byMsg) < 50 {
			s.byMsg[l.Level+": "+l.Msg]++
		}
	}
	switch {
	case l.Msg == "plugin loaded" && l.Skills != nil:
		s.loads++
		if *l.Skills != skills || l.Problems > 0 {
			s.partial++
		}
	case strings.HasPrefix(l.Msg, "plugin item ") && len(s.itemSamples) < 5:
		s.itemSamples = append(s.itemSamples, l.Path+": "+l.Reason)
	}
}

// summary returns the counts for the report.
func (s *sidecarLog) summary() (byMsg map[string]int, loads, partial int, samples []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byMsg = map[string]int{}
	for k, v := range s.byMsg {
		byMsg[k] = v
	}
	return byMsg, s.loads, s.partial, append([]string(nil), s.itemSamples...)
}

func (e *env) logf(format string, args ...any) {
	if e.o.Progress != nil {
		fmt.Fprintf(e.o.Progress, "soak: "+format+"\n", args...)
	}
}

// setup builds the binaries, writes the plugin and starts the upstream and
// the sidecar. The returned env is non-nil even on error, and its stop must
// be called.
func setup(ctx context.Context, o Options) (*env, error) {
	e := &env{o: o}
	dir, err := os.MkdirTemp("", "skills-sidecar-soak-")
	if err != nil {
		return e, fmt.Errorf("temp dir: %w", err)
	}
	e.dir = dir
	e.sidecarBin, e.upstreamBin = o.SidecarBin, o.UpstreamBin
	if e.sidecarBin == "" || e.upstreamBin == "" {
		e.logf("building skills-sidecar and demo-upstream (race %v)", o.Race)
		mod, err := ModuleDir(ctx)
		if err != nil {
			return e, err
		}
		sc, up, err := Build(ctx, mod, dir, o.Race)
		if err != nil {
			return e, err
		}
		e.sidecarBin, e.upstreamBin = orDefault(e.sidecarBin, sc), orDefault(e.upstreamBin, up)
	}
	if e.plugin, err = NewPlugin(filepath.Join(dir, "plugin"), o.Skills); err != nil {
		return e, err
	}
	e.plugin.KeepOld = o.KeepOld
	addrs := make([]string, 3)
	for i := range addrs {
		if addrs[i], err = FreeAddr(); err != nil {
			return e, err
		}
	}
	e.upAddr = addrs[0]
	e.mcpURL, e.metricsBase = "http://"+addrs[1]+"/mcp", "http://"+addrs[2]
	e.upPort, e.mcpPort = port(addrs[0]), port(addrs[1])
	if e.upstream, err = e.startUpstream(ctx); err != nil {
		return e, err
	}
	return e, e.startSidecar(ctx, addrs[1], addrs[2])
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// startUpstream starts demo-upstream on the soak's upstream address and
// waits for its "ready URL" line. Right after a kill the port may still be
// taken for a moment, so a start that fails is retried.
func (e *env) startUpstream(ctx context.Context) (*Process, error) {
	var last error
	for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
		ready := make(chan struct{})
		var once sync.Once
		p, err := Start("demo-upstream", e.upstreamBin, []string{"--listen", e.upAddr}, func(line string) {
			if strings.HasPrefix(line, "ready ") {
				once.Do(func() { close(ready) })
			}
		})
		if err != nil {
			return nil, err
		}
		select {
		case <-ready:
			return p, nil
		case <-p.Done():
			last = fmt.Errorf("demo-upstream exited: %s", lastLines(p.Output(), 3))
			time.Sleep(100 * time.Millisecond)
		case <-time.After(15 * time.Second):
			p.Kill()
			return nil, fmt.Errorf("%w: demo-upstream printed no ready line in 15s", errNotReady)
		case <-ctx.Done():
			p.Kill()
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("start demo-upstream on %s: %w", e.upAddr, last)
}

func (e *env) startSidecar(ctx context.Context, listen, metricsListen string) error {
	args := []string{"serve", "--listen", listen, "--metrics-listen", metricsListen,
		"--upstream", "http://" + e.upAddr + "/mcp", "--plugin-dir", e.plugin.Dir, "--annotations-file", "",
		"--poll-interval", "1s", "--page-size", strconv.Itoa(e.o.PageSize)}
	p, err := Start("skills-sidecar", e.sidecarBin, args, e.sidecarLine)
	if err != nil {
		return err
	}
	e.sidecar = p
	return WaitFor(ctx, p, 30*time.Second, func(ctx context.Context) error {
		return get200(ctx, e.metricsBase+"/readyz")
	})
}

// sidecarLine counts the sidecar's warnings and errors and notices panics
// and data race reports.
func (e *env) sidecarLine(line string) {
	e.logs.record(line, e.o.Skills)
	switch {
	case strings.Contains(line, `"level":"warn"`):
		e.warnLines.Add(1)
	case strings.Contains(line, `"level":"error"`):
		e.errorLines.Add(1)
	case strings.Contains(line, "WARNING: DATA RACE"), strings.HasPrefix(line, "panic:"), strings.HasPrefix(line, "fatal error:"):
		e.raceOrPanic.Store(true)
	}
}

func get200(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// restartUpstream kills the upstream by its pid (SIGKILL, as a crash),
// leaves it down for the outage and starts it again on the same port. It
// returns when the new one is ready.
func (e *env) restartUpstream(ctx context.Context) (down time.Duration, err error) {
	e.mu.Lock()
	old := e.upstream
	e.mu.Unlock()
	from := time.Now()
	old.Kill()
	select {
	case <-ctx.Done():
		return time.Since(from), ctx.Err()
	case <-time.After(e.o.Outage):
	}
	p, err := e.startUpstream(ctx)
	if err != nil {
		return time.Since(from), err
	}
	e.mu.Lock()
	e.upstream = p
	e.mu.Unlock()
	return time.Since(from), nil
}

// stopSidecar stops the sidecar with SIGTERM, as Kubernetes does, and
// reports how it ended.
func (e *env) stopSidecar() error {
	if e.sidecar == nil {
		return errors.New("soak: no sidecar")
	}
	e.sidecar.Stop(30 * time.Second)
	return e.sidecar.ExitErr()
}

// stop ends every process the soak started, by pid, and removes its
// folder. It is safe to call more than once.
func (e *env) stop() {
	e.mu.Lock()
	up := e.upstream
	e.mu.Unlock()
	e.sidecar.Stop(30 * time.Second)
	up.Stop(5 * time.Second)
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// resources reads the sidecar's /metrics and its sockets.
func (e *env) resources(ctx context.Context, sc *Scraper) (Resources, error) {
	s, err := sc.Scrape(ctx)
	if err != nil {
		return Resources{}, err
	}
	socks, err := ReadSockets(e.sidecar.PID(), e.upPort, e.mcpPort)
	if err != nil {
		return Resources{}, err
	}
	return Resources{Sample: s, Sockets: socks}, nil
}
