package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/h1"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar"
)

func runServe(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, environ, os.ReadFile, stdout) // asked-for help goes to stdout
	if errors.Is(err, config.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "skills-sidecar: invalid configuration:\n%v\n", err)
		return exitUsage
	}
	demoMode := cfg.Upstream == "" && cfg.UpstreamCommand == ""
	level, log, err := newLogger(cfg, demoMode, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "skills-sidecar: %v\n", err)
		return exitUsage
	}
	defer func() { _ = log.Sync() }()
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	go watchLogLevel(ctx, cfg.AnnotationsFile, levelFixed(args, environ), level, log, 5*time.Second)
	if err := serve(ctx, cfg, log, stdout, environ); err != nil {
		log.Error("sidecar stopped", zap.Error(err))
		return exitFail
	}
	return exitOK
}

// levelFixed reports whether a flag or the environment sets the log level,
// which then outranks the annotation at run time as it does at start.
// Flags end at "--": what follows is a stdio server's command line, whose
// own --log-level is the server's.
func levelFixed(args, environ []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "log-level") {
			return true
		}
	}
	for _, kv := range environ {
		if strings.HasPrefix(kv, config.EnvName("log-level")+"=") {
			return true
		}
	}
	return false
}

func newLogger(cfg config.Config, demoMode bool, stderr io.Writer) (zap.AtomicLevel, *zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(cfg.LogLevel)
	if err != nil {
		return zap.AtomicLevel{}, nil, fmt.Errorf("log-level: %w", err)
	}
	// Validate takes the format in any ASCII case, so it is read so here.
	format := strings.ToLower(cfg.LogFormat)
	if format == "auto" {
		format = "json"
		if demoMode {
			format = "console"
		}
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	encCfg.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	if format == "console" {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	level := zap.NewAtomicLevelAt(lvl)
	core := zapcore.NewCore(enc, zapcore.AddSync(stderr), level)
	return level, zap.New(core), nil
}

// ownsProcess is set by main: run may change what belongs to the whole
// process (GOMAXPROCS) only in the binary, not in a test that calls it.
var ownsProcess bool

// procsFor is the GOMAXPROCS serve sets for --max-procs n, or 0 to leave
// the runtime's own: a GOMAXPROCS in the environment that the runtime
// took (a number above 0: it ignores any other value) wins, and n 0 asks
// for Go's default.
func procsFor(n int, environ []string) int {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GOMAXPROCS="); ok {
			if p, err := strconv.Atoi(v); err == nil && p > 0 {
				return 0
			}
		}
	}
	return n
}

// serve runs the sidecar until ctx is done, then drains.
func serve(ctx context.Context, cfg config.Config, log *zap.Logger, stdout io.Writer, environ []string) error {
	if n := procsFor(cfg.MaxProcs, environ); n > 0 && ownsProcess {
		runtime.GOMAXPROCS(n)
	}
	var plugin fs.FS
	if cfg.Upstream == "" && cfg.UpstreamCommand == "" {
		stop, err := startDemoUpstream(ctx, &cfg, log)
		if err != nil {
			return err
		}
		defer stop()
		plugin = examples.Plugin()
	}
	// SIGHUP reloads a plugin folder (reloadOnHangup). It is taken from
	// here until serve returns, so that one sent during the initial load or
	// the drain is not the signal's default action, which ends the process
	// at once, cutting what it still serves.
	var hup chan os.Signal
	if cfg.PluginDir != "" {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	// Bound before the sidecar is built: the Host check depends on the
	// address it listens on (connections wait in the backlog until Serve).
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	reg := prometheus.NewRegistry()
	s, err := sidecar.New(ctx, cfg, sidecar.Options{Logger: log, Registry: reg, Version: version, Listener: ln.Addr(), Plugin: plugin, Environ: environ})
	if err != nil {
		return err
	}
	defer s.Close() // after draining: a stdio upstream's processes end last
	if s.Stdio != nil && os.Getpid() == 1 {
		go reapOrphans(ctx, s.Stdio.Owns)
	}
	if s.Watcher != nil && hup != nil {
		go reloadOnHangup(ctx, hup, s.Watcher)
	}
	up, _ := url.Parse(cfg.Upstream) // sidecar.New parsed it
	ready := newReadiness(up, cfg.AuthGate)
	if s.Stdio != nil {
		ready.stdio = s.Stdio.Ready
	}
	ready.eras = s.Eras.Current
	if cfg.EraBridge == "auto" {
		ready.probed = s.Eras.Probed
	}
	stopOps, err := serveOps(cfg.MetricsListen, reg, ready)
	if err != nil {
		return err
	}
	defer stopOps()
	srv := mcpServer(cfg, s.Handler(), log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	announce(cfg, log, ln.Addr(), stdout, plugin != nil || s.Stdio != nil)
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	ready.draining.Store(true)
	drain(cfg, log, srv, s)
	return nil
}

// server is what serving the MCP listener needs of an HTTP server: both
// net/http's and the sidecar's own (internal/h1) have it.
type server interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// mcpServer is the server of the MCP listener that cfg's http-server names.
func mcpServer(cfg config.Config, h http.Handler, log *zap.Logger) server {
	const readHeader, idle = 10 * time.Second, 120 * time.Second
	errLog := zap.NewStdLog(log.Named("http"))
	if cfg.HTTPServer == "net/http" {
		return &http.Server{Handler: h, ReadHeaderTimeout: readHeader, IdleTimeout: idle, MaxHeaderBytes: cfg.MaxHeaderBytes, ErrorLog: errLog}
	}
	return &h1.Server{Handler: h, ReadHeaderTimeout: readHeader, IdleTimeout: idle, MaxHeaderBytes: cfg.MaxHeaderBytes, ErrorLog: errLog}
}

// startDemoUpstream starts the embedded demo upstream and points cfg at it. The
// demo is for trying the sidecar on this machine: it listens on loopback
// unless told an address with a host, and so the Host check (origin.go)
// is in force.
func startDemoUpstream(ctx context.Context, cfg *config.Config, log *zap.Logger) (stop func(), err error) {
	cfg.Listen, cfg.MetricsListen = loopbackUnlessHost(cfg.Listen), loopbackUnlessHost(cfg.MetricsListen)
	u, stop, err := demo.Start(ctx)
	if err != nil {
		return nil, err
	}
	cfg.Upstream = u
	log.Info("no --upstream given: started the embedded demo upstream", zap.String("url", u))
	return stop, nil
}

// serveOps serves /metrics, /healthz and /readyz on addr; "" serves none.
func serveOps(addr string, reg *prometheus.Registry, ready *readiness) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	mln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (metrics-listen): %w", addr, err)
	}
	msrv := &http.Server{Handler: opsMux(reg, ready), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = msrv.Serve(mln) }()
	return func() { _ = msrv.Close() }, nil
}

// announce logs where the sidecar listens and, for the demo or a stdio
// upstream (both started by the sidecar itself), says on stdout how to try it.
func announce(cfg config.Config, log *zap.Logger, addr net.Addr, stdout io.Writer, demo bool) {
	mcpURL := "http://" + displayAddr(addr) + "/mcp"
	upstream := zap.String("upstream", config.RedactURL(cfg.Upstream))
	if argv, _ := cfg.UpstreamArgv(); argv != nil {
		upstream = zap.String("upstream-command", argv[0]) // only the program: arguments may hold secrets
	}
	log.Info("skills-sidecar listening", zap.String("mcp", mcpURL), upstream, zap.String("version", version), zap.Int("processors", runtime.GOMAXPROCS(0)))
	if demo {
		what := "the demo"
		if argv, _ := cfg.UpstreamArgv(); argv != nil {
			what = filepath.Base(argv[0]) + " (stdio)"
		}
		fmt.Fprintf(stdout, "skills-sidecar %s is serving %s at %s\n\n"+
			"Try it with the MCP Inspector CLI (Node.js 22.19 or later):\n"+
			"  npx @modelcontextprotocol/inspector@2.12.0 --cli %s --method skills/list --verify\n"+
			"  npx @modelcontextprotocol/inspector@2.12.0 --cli %s --method tools/list\n\n", version, what, mcpURL, mcpURL, mcpURL)
	}
}

// drain stops serving: after --shutdown-delay (still serving, not ready)
// it ends the standalone streams and waits up to --drain-timeout for
// requests and detached streams, then closes what remains.
func drain(cfg config.Config, log *zap.Logger, srv server, s *sidecar.Sidecar) {
	if cfg.ShutdownDelay > 0 {
		log.Info("shutting down: still serving, not ready", zap.Duration("shutdown-delay", cfg.ShutdownDelay))
		time.Sleep(cfg.ShutdownDelay)
	}
	log.Info("shutting down: draining", zap.Duration("drain-timeout", cfg.DrainTimeout))
	s.Proxy.EndStreams()
	dctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	err := srv.Shutdown(dctx)
	if err == nil {
		err = s.Proxy.WaitStreams(dctx) // detached GET streams are not the server's to wait for
	}
	if err != nil {
		log.Warn("drain timeout reached: closing remaining connections", zap.Error(err))
		_ = srv.Close()
	}
}

// loopbackUnlessHost gives addr (host:port) the host 127.0.0.1 when it has
// none, as ":8080" has; an empty addr stays empty.
func loopbackUnlessHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// displayAddr turns a listener address into one a person can paste: an
// unspecified host becomes 127.0.0.1.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// reloadOnHangup reloads the plugin folder on each SIGHUP hup receives
// until ctx is done, as daemons conventionally do: for a folder whose
// change no event or poll has seen yet (an image volume, a network file
// system). Its caller keeps hup registered until the process is done, so a
// SIGHUP while draining is ignored.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, w *catalog.Watcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			w.Reload()
		}
	}
}
